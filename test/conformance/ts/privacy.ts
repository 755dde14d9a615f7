/** Executor of `privacy` vectors: the same fields and checks as `call` vectors (see call.ts). */
import { type CallVector, runCall } from './call.js';
import type { Executor } from './executor.js';

export const executor: Executor<CallVector> = { kind: 'privacy', run: runCall };
