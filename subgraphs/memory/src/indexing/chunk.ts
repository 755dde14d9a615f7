/**
 * Cuts content into chunks of at most `size` characters that overlap by `overlap` characters, preferring to end a
 * chunk at whitespace (within the last quarter of the window) so words are not split. Deterministic; the chunks
 * together cover the whole text, and content up to `size` is one chunk.
 */
export interface ChunkOptions {
  size: number;
  overlap: number;
}

export const DEFAULT_CHUNKING: ChunkOptions = { size: 2000, overlap: 200 };

export function chunkText(text: string, opts: ChunkOptions = DEFAULT_CHUNKING): string[] {
  const { size, overlap } = opts;
  if (!(size > 0) || !(overlap >= 0) || overlap >= size) {
    throw new Error(`chunkText: need size > overlap >= 0 (got size ${size}, overlap ${overlap})`);
  }
  if (text.length === 0) return [];
  if (text.length <= size) return [text];
  const chunks: string[] = [];
  let start = 0;
  for (;;) {
    let end = Math.min(start + size, text.length);
    if (end < text.length) {
      const floor = start + Math.floor((size * 3) / 4);
      const space = text.lastIndexOf(' ', end);
      const newline = text.lastIndexOf('\n', end);
      const cut = Math.max(space, newline);
      if (cut > floor) end = cut;
      // Never between the two halves of a surrogate pair.
      const code = text.charCodeAt(end - 1);
      if (code >= 0xd800 && code <= 0xdbff) end--;
    }
    chunks.push(text.slice(start, end));
    if (end >= text.length) return chunks;
    start = Math.max(end - overlap, start + 1);
  }
}
