export interface Finding {
  rule: string;
  path?: string;
  message: string;
}

export interface AnalysisLimits {
  maxEntries: number;
  maxEntryBytes: number;
  maxTotalBytes: number;
  maxRatio: number;
  maxManifestBytes: number;
}

export declare function analyzePackage(
  zip: Buffer,
  expected: { plugin: string; version: string },
  limits: AnalysisLimits,
): Promise<{ findings: Finding[]; manifest: unknown; files: number; bytes: number }>;
