/** A reader of a server-sent event stream for tests (what a browser's EventSource gets, frame by frame). */
export interface Sse {
  status: number;
  contentType: string;
  events: { event: string; data: any }[];
  raw: () => string;
  /** Resolves with the first event (from the start) that matches; fails after timeoutMs. */
  next(pred: (e: { event: string; data: any }) => boolean, timeoutMs?: number): Promise<{ event: string; data: any }>;
  ended: Promise<void>;
  close(): void;
}

/** An EventSource-like reader over fetch: parses frames as they arrive. */
export async function openSse(url: string, cookie?: string): Promise<Sse> {
  const ac = new AbortController();
  const res = await fetch(url, { headers: { accept: 'text/event-stream', ...(cookie ? { cookie } : {}) }, signal: ac.signal });
  const events: { event: string; data: any }[] = [];
  let raw = '';
  let buf = '';
  const waiters = new Set<() => void>();
  const ended = (async () => {
    if (!res.body) return;
    const reader = res.body.getReader();
    const dec = new TextDecoder();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        const chunk = dec.decode(value, { stream: true });
        raw += chunk;
        buf += chunk;
        let i: number;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const frame = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const ev = /^event: (.*)$/m.exec(frame)?.[1];
          const data = /^data: (.*)$/m.exec(frame)?.[1];
          if (ev && data !== undefined) events.push({ event: ev, data: JSON.parse(data) });
        }
        for (const w of waiters) w();
      }
    } catch {
      // aborted
    }
    for (const w of waiters) w();
  })();
  return {
    status: res.status,
    contentType: res.headers.get('content-type') ?? '',
    events,
    raw: () => raw,
    ended,
    close: () => ac.abort(),
    next(pred, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const hit = events.find(pred);
          if (hit) {
            waiters.delete(check);
            clearTimeout(t);
            resolve(hit);
          }
        };
        const t = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no matching event in ${timeoutMs} ms; got ${JSON.stringify(events).slice(0, 2000)}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
  };
}
