// The framework's floor for bench/rest: a Fastify app answering the same JSON that berth answers,
// the way berth answers it (an object serialized by Fastify, a route handler, an onSend hook that
// adds the two rate-limit headers), with no authentication, store or limiter behind it.
import Fastify from 'fastify';

const body = JSON.parse(process.env.BENCH_BODY);
const app = Fastify({ logger: false, childLoggerFactory: (parent) => parent });
app.addHook('onSend', (_req, reply, payload, done) => {
  reply.headers({ 'X-RateLimit-Limit': '1000000000', 'X-RateLimit-Remaining': '999999999' });
  done(null, payload);
});
app.get('/api/v1/teams/current', async (req, reply) => {
  if (!req.headers.authorization) return reply.code(401).send({ message: 'Unauthenticated.' });
  return body;
});
await app.listen({ port: 0, host: '127.0.0.1' });
console.log(`listening on http://127.0.0.1:${app.server.address().port}`);
process.on('SIGTERM', () => app.close().then(() => process.exit(0)));
