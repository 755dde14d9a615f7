/** The fault proxy's settings, validated with zod: random faults (probabilities) and scripted rules. */
import { z } from 'zod';

const probability = z.number().min(0).max(1);
const nonNegativeInt = z.number().int().min(0);

/** An SSE cut point: after this many complete events, or after this many body bytes (exactly one). */
const exactlyOneCutPoint = {
  check: (c: { afterEvents?: number | undefined; afterBytes?: number | undefined }) =>
    (c.afterEvents === undefined) !== (c.afterBytes === undefined),
  message: 'give exactly one of afterEvents or afterBytes',
};

/**
 * Random faults, each with its probability per request. dropRequest, dropResponse, rateLimit and unavailable
 * exclude one another (their sum must be at most 1); delay and cutStream are drawn independently on top.
 */
export const FaultsSchema = z
  .object({
    /** Close the client's socket without forwarding the request. */
    dropRequest: probability.default(0),
    /** Forward, read the upstream's whole answer, then close the client's socket instead of answering. */
    dropResponse: probability.default(0),
    /** Answer 429 with Retry-After without forwarding. */
    rateLimit: probability.default(0),
    /** Answer 503 with Retry-After without forwarding. */
    unavailable: probability.default(0),
    /** Retry-After (seconds) of the 429/503 answers. */
    retryAfterSeconds: nonNegativeInt.default(1),
    /** Wait `ms` before forwarding. */
    delay: z.object({ probability, ms: nonNegativeInt }).optional(),
    /** Cut an SSE answer (text/event-stream) at the given point. */
    cutStream: z
      .object({ probability, afterEvents: nonNegativeInt.optional(), afterBytes: nonNegativeInt.optional() })
      .refine(exactlyOneCutPoint.check, exactlyOneCutPoint.message)
      .optional(),
  })
  .refine((f) => f.dropRequest + f.dropResponse + f.rateLimit + f.unavailable <= 1 + 1e-9, {
    message:
      'dropRequest + dropResponse + rateLimit + unavailable must be at most 1 (they exclude one another)',
  });
export type FaultsInput = z.input<typeof FaultsSchema>;
export type Faults = z.output<typeof FaultsSchema>;

/** What a rule (or a random draw) does to one request. */
export const ActionSchema = z.discriminatedUnion('type', [
  /** Forward untouched (a rule that shields matching requests from random faults). */
  z.object({ type: z.literal('pass') }),
  z.object({ type: z.literal('dropRequest') }),
  z.object({ type: z.literal('dropResponse') }),
  /** Answer with this status without forwarding; 429/503 carry Retry-After and a GraphQL error body. */
  z.object({
    type: z.literal('respond'),
    status: z.number().int().min(400).max(599),
    retryAfterSeconds: nonNegativeInt.optional(),
  }),
  /** Wait, then forward. */
  z.object({ type: z.literal('delay'), ms: nonNegativeInt }),
  /** Forward and cut the SSE answer at the given point. */
  z
    .object({
      type: z.literal('cutStream'),
      afterEvents: nonNegativeInt.optional(),
      afterBytes: nonNegativeInt.optional(),
    })
    .refine(exactlyOneCutPoint.check, exactlyOneCutPoint.message),
]);
export type Action = z.infer<typeof ActionSchema>;

export const RuleSchema = z.object({
  /** Names the rule in stats().rules (default: `rule<index>`). */
  name: z.string().min(1).optional(),
  match: z
    .object({
      method: z.string().min(1).optional(),
      /** Exact path, without the query string. */
      path: z.string().startsWith('/').optional(),
      /** GraphQL operationName, from a JSON body or the `operationName` query parameter. */
      operationName: z.string().min(1).optional(),
      /** Start at the nth request (1-based) that matches the fields above (with `times`, the next ones too). */
      nth: z.number().int().min(1).optional(),
    })
    .default({}),
  action: ActionSchema,
  /** How many times the rule fires (default: once with `nth`, otherwise on every match). */
  times: z.number().int().min(1).optional(),
});
export type RuleInput = z.input<typeof RuleSchema>;
export type Rule = z.output<typeof RuleSchema>;

export const ProxyOptionsSchema = z.object({
  /** Base URL of the upstream (loopback only), e.g. http://127.0.0.1:4000. */
  upstream: z.string().url(),
  /** Seed of the random faults; the same seed and the same requests give the same faults. */
  seed: z.number().int().default(1),
  faults: FaultsSchema.default({
    dropRequest: 0,
    dropResponse: 0,
    rateLimit: 0,
    unavailable: 0,
    retryAfterSeconds: 1,
  }),
  /** Checked in order before the random faults; the first that matches decides. */
  rules: z.array(RuleSchema).default([]),
  /** Port to listen on (127.0.0.1); 0 = any free port. */
  port: z.number().int().min(0).max(65535).default(0),
  /** Largest request body the proxy buffers (bytes). */
  maxBodyBytes: z
    .number()
    .int()
    .min(1)
    .default(16 * 1024 * 1024),
});
export type ProxyOptionsInput = z.input<typeof ProxyOptionsSchema>;

const LOOPBACK_HOSTS = new Set(['localhost', '[::1]', '::1']);

/** The proxy only forwards to this machine: a test tool must not become an open relay. */
export function isLoopbackHost(hostname: string): boolean {
  return LOOPBACK_HOSTS.has(hostname) || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

/** Validates options and explains what is wrong (zod's issues joined into one message). */
export function parseOrExplain<S extends z.ZodType>(schema: S, value: unknown, what: string): z.output<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
    throw new TypeError(`fault proxy: invalid ${what}: ${issues}`);
  }
  return parsed.data;
}
