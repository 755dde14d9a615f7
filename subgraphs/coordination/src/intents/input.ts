/** Argument rules of the intent operations (zod). Errors name the argument and the rule, never the value. */
import type { AuthContext } from '@agentgraph/runtime';
import { requireWriter } from '../input.js';
import { z } from 'zod';

export const IntentId = z.guid('must be a UUID');

export const IntentAction = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(100, 'must be at most 100 characters')
  .refine((s) => !s.includes('\u0000'), 'must not contain NUL characters');

/** JSON object text, at most 16 KB, parsed. */
export const IntentParams = z
  .string()
  .max(16_384, 'must be at most 16384 characters')
  .transform((s, ctx) => {
    try {
      const v: unknown = JSON.parse(s);
      if (typeof v === 'object' && v !== null && !Array.isArray(v)) return v as Record<string, unknown>;
    } catch {
      // reported below
    }
    ctx.addIssue({ code: 'custom', message: 'must be a JSON object, e.g. {"path": "C:/report.pdf"}' });
    return z.NEVER;
  });

export const ExpiresIn = z
  .number()
  .int('must be a whole number of seconds')
  .min(10, 'must be at least 10 seconds')
  .max(3600, 'must be at most 3600 seconds (1 hour)');

export const ExecutionTimeout = z
  .number()
  .int('must be a whole number of seconds')
  .min(10, 'must be at least 10 seconds')
  .max(86_400, 'must be at most 86400 seconds (1 day)');

export const AfterSeqArg = z.number().int().min(0, 'must be 0 or more (0 replays every intent)');

export function requireOperator(auth: AuthContext): void {
  requireWriter(auth, 'create intents');
}
