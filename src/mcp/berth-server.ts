import { Server, type JSONRPCRequest, type Result, type ServerContext } from '@modelcontextprotocol/server';

/** How berth answers a tools/call: first, with the SDK's own handling of it (`sdk`) to call for a listed tool. */
export type ToolCallDoor = (request: JSONRPCRequest, ctx: ServerContext, sdk: () => Promise<Result>) => Promise<Result>;

/**
 * The SDK's low-level Server, every method registered through setRequestHandler, with one
 * override of its documented subclass hook (`_wrapHandler`, protected): a tools/call reaches
 * berth's tool session as it came, before the SDK's checks of the request and of the result.
 * Needed for what the SDK's tools/call cannot carry (SDK 2.4): a task (the tasks extension's
 * answer is another result family, which the SDK refuses as a tools/call result), and a prototype
 * key in the arguments (the SDK's parse of the params drops it; berth answers the contract's 422).
 */
export class BerthServer extends Server {
  private toolCalls?: ToolCallDoor;

  /** Berth's tools/call, set before the SDK's handler is registered (the hook wraps it then). */
  answerToolCalls(door: ToolCallDoor): void {
    this.toolCalls = door;
  }

  protected override _wrapHandler(method: string, handler: (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result>): (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result> {
    const sdk = super._wrapHandler(method, handler);
    const door = this.toolCalls;
    if (method !== 'tools/call' || !door) return sdk;
    return (request, ctx) => door(request, ctx, () => sdk(request, ctx));
  }
}
