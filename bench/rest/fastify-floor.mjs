// The floors for bench/rest: a Fastify app answering the same JSON that berth answers, the way
// berth answers it (an object serialized by Fastify, an onSend hook adding the two rate-limit
// headers), with nothing behind it. With BENCH_STORE (berth's SQLite file) and BENCH_TOKEN set, it
// also does the two things no berth request can skip: the SHA-256 of the presented secret with a
// constant-time compare, and the store freshness check (`PRAGMA data_version`) that lets a
// revocation by another process apply on the very next request.
import { hash, timingSafeEqual } from 'node:crypto';
import Fastify from 'fastify';

const body = JSON.parse(process.env.BENCH_BODY);
let check = () => true;
if (process.env.BENCH_STORE) {
  const { default: SQLite } = await import('better-sqlite3');
  const db = new SQLite(process.env.BENCH_STORE);
  const dataVersion = db.prepare('PRAGMA data_version').pluck();
  const stored = hash('sha256', process.env.BENCH_TOKEN.split('|')[1], 'buffer');
  check = (authorization) => {
    dataVersion.get();
    const secret = authorization.slice(authorization.indexOf('|') + 1);
    return timingSafeEqual(hash('sha256', secret, 'buffer'), stored);
  };
}

const app = Fastify({ logger: false, childLoggerFactory: (parent) => parent });
app.addHook('onSend', (_req, reply, payload, done) => {
  reply.headers({ 'X-RateLimit-Limit': '1000000000', 'X-RateLimit-Remaining': '999999999' });
  done(null, payload);
});
app.get('/api/v1/teams/current', async (req, reply) => {
  if (!req.headers.authorization || !check(req.headers.authorization)) return reply.code(401).send({ message: 'Invalid token.' });
  return body;
});
await app.listen({ port: 0, host: '127.0.0.1' });
console.log(`listening on http://127.0.0.1:${app.server.address().port}`);
process.on('SIGTERM', () => app.close().then(() => process.exit(0)));
