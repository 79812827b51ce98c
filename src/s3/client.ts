import aws4 from 'aws4';

export interface S3Target {
  endpoint: string;
  bucket: string;
  region: string;
  key: string;
  secret: string;
}

/** What S3 answered instead of a listing, in words a person can act on. */
function explain(status: number, body: string): string {
  const code = /<Code>([^<]+)<\/Code>/.exec(body)?.[1];
  const message = /<Message>([^<]+)<\/Message>/.exec(body)?.[1];
  if (code === 'NoSuchBucket') return 'The bucket does not exist at this endpoint.';
  if (code === 'InvalidAccessKeyId') return 'The access key is not known to this endpoint.';
  if (code === 'SignatureDoesNotMatch') return 'The secret key does not match the access key.';
  if (code === 'AccessDenied') return 'The key may not list this bucket.';
  return `S3 answered ${status}${code ? ` ${code}` : ''}${message ? `: ${message}` : ''}.`;
}

/**
 * Checks that a bucket can be listed with the given keys: ListObjectsV2 for one key, signed with
 * AWS Signature V4 (path-style addressing, which every S3-compatible store accepts). Throws with
 * the reason; the endpoint's address is checked like every outbound target.
 */
/** What the check needs of the outbound guard (the core's TargetGuard is one); s3 sits below the core. */
export interface BucketGuard {
  urlRefusal(url: string): string | null;
  fetch(url: string, init: { method: 'GET'; headers: Record<string, string>; timeoutMs: number }): Promise<{ status: number; text: string }>;
}

export async function checkBucket(t: S3Target, guard: BucketGuard, timeoutMs = 10_000): Promise<void> {
  const why = guard.urlRefusal(t.endpoint);
  if (why) throw new Error(`The endpoint is not allowed: ${why}`);
  const base = new URL(t.endpoint);
  const path = `${base.pathname.replace(/\/$/, '')}/${encodeURIComponent(t.bucket)}?list-type=2&max-keys=1`;
  const signed = aws4.sign({ host: base.host, path, method: 'GET', service: 's3', region: t.region, protocol: base.protocol, headers: {} }, { accessKeyId: t.key, secretAccessKey: t.secret });
  let res;
  try {
    res = await guard.fetch(`${base.protocol}//${base.host}${path}`, { method: 'GET', headers: signed.headers as Record<string, string>, timeoutMs });
  } catch (err) {
    throw new Error(`Could not reach the endpoint: ${(err as Error).message}`);
  }
  const body = res.text;
  if (res.status !== 200) throw new Error(explain(res.status, body));
  if (!body.includes('<ListBucketResult')) throw new Error('The endpoint did not answer like S3 (no ListBucketResult).');
}
