import { createHash } from 'node:crypto';
import { isX25519PublicKey } from '../../platform/public-keys.js';
import { AppsErrors } from '../apps.errors.js';
import { ManifestSchema } from '../apps.schemas.js';
import { CardSchema } from './cards.js';
import { compilePattern } from './patterns.js';
import type { z } from 'zod';

export type Manifest = z.infer<typeof ManifestSchema>;

/** JSON with object keys sorted at every level and no whitespace (what manifestHash is taken over). */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    // Cast: the caller checked that value is a non-array object.
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** docs/apps/overview.md: the hex SHA-256 of the manifest as uploaded, keys sorted, no whitespace. */
export const manifestHash = (uploaded: unknown) => createHash('sha256').update(canonicalJson(uploaded)).digest('hex');

/**
 * A manifest checked against its schema and its own declarations: ids unique where they name
 * something, every command's flow declared, select inputs with options, rule bounds in order, the
 * sealing key a 32-byte X25519 key. 400 MANIFEST_INVALID whose details name each problem by path.
 */
export function parseManifest(uploaded: unknown): Manifest {
  const parsed = ManifestSchema.safeParse(uploaded);
  if (!parsed.success) {
    throw AppsErrors.MANIFEST_INVALID({ details: parsed.error.issues.map((issue) => ({ path: issue.path.join('.'), message: issue.message })) });
  }
  const manifest = parsed.data;
  const problems: { path: string; message: string }[] = [];
  const unique = (ids: string[], path: string) => {
    const seen = new Set<string>();
    ids.forEach((id, i) => {
      if (seen.has(id)) problems.push({ path: `${path}.${i}.id`, message: `duplicate id ${id}` });
      seen.add(id);
    });
  };
  unique(manifest.commands.map((c) => c.id), 'commands');
  unique(manifest.flows.map((f) => f.id), 'flows');
  const flows = new Set(manifest.flows.map((f) => f.id));
  /** A list of inputs (a view's, a command's options): ids unique, select options where they belong, rule bounds in order, patterns RE2 runs. */
  const checkInputs = (inputs: Manifest['flows'][number]['views'][number]['inputs'], at: string) => {
    unique(inputs.map((input) => input.id), at);
    inputs.forEach((input, i) => {
      const path = `${at}.${i}`;
      const rules = input.rules ?? {};
      if (input.type === 'select' && !rules.options) problems.push({ path: `${path}.rules.options`, message: 'a select input needs options' });
      if (input.type !== 'select' && rules.options) problems.push({ path: `${path}.rules.options`, message: 'only a select input has options' });
      if (rules.minLength !== undefined && rules.maxLength !== undefined && rules.minLength > rules.maxLength) problems.push({ path: `${path}.rules`, message: 'minLength exceeds maxLength' });
      if (rules.min !== undefined && rules.max !== undefined && rules.min > rules.max) problems.push({ path: `${path}.rules`, message: 'min exceeds max' });
      if (rules.pattern !== undefined && !compilePattern(rules.pattern)) {
        problems.push({ path: `${path}.rules.pattern`, message: 'not a regular expression RE2 can run (no backreferences or lookaround)' });
      }
    });
  };
  manifest.commands.forEach((command, i) => {
    if (command.flow !== undefined && !flows.has(command.flow)) problems.push({ path: `commands.${i}.flow`, message: `names the flow ${command.flow}, which is not declared` });
    if (command.flow !== undefined && (command.options !== undefined || command.argument !== undefined)) {
      problems.push({ path: `commands.${i}`, message: 'a command opens a form (flow), or takes text and options, not both' });
    }
    // Text and options travel beside the answers, not sealed: an app that seals takes them through a form.
    if (manifest.sealing && (command.options !== undefined || command.argument !== undefined)) {
      problems.push({ path: `commands.${i}`, message: 'an app with a sealing key takes text and options through a form, where they are sealed' });
    }
    if (command.options) checkInputs(command.options, `commands.${i}.options`);
  });
  manifest.flows.forEach((flow, f) => {
    unique(flow.views.map((v) => v.id), `flows.${f}.views`);
    flow.views.forEach((view, v) => checkInputs(view.inputs, `flows.${f}.views.${v}.inputs`));
  });
  if (manifest.sealing && !isX25519PublicKey(manifest.sealing.publicKey)) problems.push({ path: 'sealing.publicKey', message: 'not base64 of a 32-byte X25519 public key' });
  unique(manifest.scopes.map((s) => s), 'scopes');
  unique((manifest.templates ?? []).map((t) => t.id), 'templates');
  (manifest.templates ?? []).forEach((template, i) => {
    const card = CardSchema.safeParse(template.card);
    if (!card.success) for (const issue of card.error.issues) problems.push({ path: `templates.${i}.card.${issue.path.join('.')}`, message: issue.message });
  });
  if (problems.length > 0) throw AppsErrors.MANIFEST_INVALID({ message: `The manifest breaks its own declarations: ${problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`, details: problems });
  return manifest;
}
