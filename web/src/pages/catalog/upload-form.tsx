/**
 * Upload a release's package (a zip, at most 5 MB) through the SDK's `uploadPackage` (the gateway forwards it to the
 * catalog). The browser reports no upload progress for fetch, so the bar is indeterminate, with the file's name and
 * size. On success the package is QUARANTINED and its analysis queued: `onUploaded` gets the release id.
 */
import { useState } from 'preact/hooks';
import { uploadPackage } from '@agentgraph/sdk';
import { sdk } from '../../api.js';
import { ProblemNotice } from '../../ui/problem.js';
import { useAction } from '../../ui/use-action.js';
import { formatBytes } from './states.js';

export const MAX_PACKAGE_BYTES = 5 * 1024 * 1024;

export function UploadForm({
  pluginName,
  version: fixedVersion,
  onUploaded,
}: {
  pluginName: string;
  /** The release's version; without it the form asks (the catalog declares the release if needed). */
  version?: string;
  onUploaded: (releaseId: string) => void;
}) {
  const [version, setVersion] = useState(fixedVersion ?? '');
  const [file, setFile] = useState<File | null>(null);
  const [tooBig, setTooBig] = useState(false);
  const upload = useAction(async (f: File, v: string) => {
    const r = await uploadPackage(sdk.client, { plugin: pluginName, version: v, body: f });
    onUploaded(r.releaseId);
  });
  const idBase = `upload-${pluginName}-${fixedVersion ?? 'any'}`.replace(/[^\w-]/g, '_');
  return (
    <form
      class="stack"
      aria-label={`Upload a package for ${pluginName}`}
      onSubmit={(e) => {
        e.preventDefault();
        if (file && version.trim() && !tooBig) void upload.run(file, version.trim());
      }}
    >
      {fixedVersion ? null : (
        <>
          <label for={`${idBase}-version`}>
            Version <span class="hint">(semantic version, e.g. 1.4.0)</span>
          </label>
          <input
            id={`${idBase}-version`}
            required
            value={version}
            autocomplete="off"
            onInput={(e) => setVersion(e.currentTarget.value)}
          />
        </>
      )}
      <label for={`${idBase}-file`}>
        Package file{' '}
        <span class="hint" id={`${idBase}-file-hint`}>
          (a .zip with a manifest.json whose name and version match; at most 5 MB)
        </span>
      </label>
      <input
        id={`${idBase}-file`}
        type="file"
        accept=".zip,application/zip"
        required
        aria-describedby={`${idBase}-file-hint`}
        onChange={(e) => {
          const f = e.currentTarget.files?.[0] ?? null;
          setFile(f);
          setTooBig(!!f && f.size > MAX_PACKAGE_BYTES);
          upload.clear();
        }}
      />
      {tooBig && file ? (
        <p class="danger" role="alert">
          {file.name} is {formatBytes(file.size)}: over the 5 MB limit. Leave out assets the plugin does not
          need.
        </p>
      ) : null}
      <div class="actions row">
        <button type="submit" class="primary" disabled={upload.busy || !file || tooBig}>
          Upload package
        </button>
      </div>
      {upload.busy && file ? (
        <div role="status" class="upload-progress">
          <label for={`${idBase}-progress`}>
            Uploading {file.name} ({formatBytes(file.size)})…
          </label>
          <progress id={`${idBase}-progress`} />
        </div>
      ) : null}
      <ProblemNotice error={upload.error} title="The upload did not go through" />
    </form>
  );
}
