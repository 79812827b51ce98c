import { build } from 'esbuild';

/**
 * A test host for MCP Apps views: the extension's own host side (AppBridge over
 * PostMessageTransport) bundled for the browser, mounting a view's HTML in a sandboxed iframe
 * (scripts only, an opaque origin: as chat clients run them). The MCP client it relays tools/call
 * to runs in Node (window.hostCallTool, exposed by the test): the bridge is the page's, the
 * server is a real berth.
 */
const ENTRY = `
import { AppBridge, PostMessageTransport } from '@modelcontextprotocol/ext-apps/app-bridge';
window.openedLinks = [];
window.mountedAt = {};
window.mountView = async (id, html, toolResult, theme, width) => {
  window.mountedAt[id] = Date.now();
  const frame = document.createElement('iframe');
  frame.id = id;
  frame.setAttribute('sandbox', 'allow-scripts');
  frame.style.cssText = 'display:block;margin:8px;border:1px solid #8888;height:200px;width:' + width + 'px';
  document.body.appendChild(frame);
  const bridge = new AppBridge(null, { name: 'berth-test-host', version: '1' }, { openLinks: {}, serverTools: {} }, { hostContext: { theme } });
  bridge.oncalltool = (params) => window.hostCallTool(params);
  bridge.onopenlink = async ({ url }) => { window.openedLinks.push(url); return {}; };
  bridge.onsizechange = ({ height }) => { if (height) frame.style.height = Math.min(height + 2, 1200) + 'px'; };
  bridge.oninitialized = () => { bridge.sendToolResult(toolResult); };
  // Connected before the document loads: the view says ui/initialize as soon as it runs.
  await bridge.connect(new PostMessageTransport(frame.contentWindow, frame.contentWindow));
  frame.srcdoc = html;
};
`;

let page: Promise<string> | undefined;

/** The host page (built once per test file). */
export function hostPage(): Promise<string> {
  page ??= build({
    stdin: { contents: ENTRY, resolveDir: process.cwd(), loader: 'js' },
    bundle: true,
    write: false,
    format: 'iife',
    platform: 'browser',
    target: 'chrome120',
    minify: true,
    logLevel: 'silent',
  }).then(
    (r) =>
      `<!doctype html><html><head><meta charset="utf-8"><title>berth test host</title></head><body style="margin:0;background:#888">${'<script>'}${r.outputFiles[0]!.text.replace(/<\/script/gi, '<\\/script')}</script></body></html>`,
  );
  return page;
}
