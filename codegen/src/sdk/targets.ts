/** The registry of SDK targets `npm run codegen` runs, in this order. */
import type { Target } from './target.js';
import { csharpTarget } from './csharp/index.js';
import { pythonTarget } from './python/index.js';
import { typescriptTarget } from './typescript/index.js';

export const TARGETS: readonly Target[] = [typescriptTarget, csharpTarget, pythonTarget];
