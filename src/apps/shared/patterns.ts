import RE2 from 're2';

/**
 * The `rules.pattern` of apps' text inputs runs on RE2, whose time is linear in the answer's length
 * whatever the pattern (no backtracking), so no member's answer can stall a process. Patterns RE2
 * cannot run (backreferences, lookaround) are refused when the manifest is uploaded.
 */
const compiled = new Map<string, RE2 | null>();
const KEPT = 1_000;

/** The whole-answer matcher of a pattern, or null when RE2 cannot run it. */
export function compilePattern(pattern: string): RE2 | null {
  let matcher = compiled.get(pattern);
  if (matcher === undefined) {
    try {
      matcher = new RE2(`^(?:${pattern})$`, 'u');
    } catch {
      matcher = null;
    }
    // A bounded memo: the oldest pattern goes first.
    if (compiled.size >= KEPT) compiled.delete(compiled.keys().next().value ?? '');
    compiled.set(pattern, matcher);
  }
  return matcher;
}
