import type { Summarizer, Summary, TranscriptLine } from './summarizer.js';

const STOPWORDS = new Set(
  'a an and are as at be but by for from has have i if in is it its me my no not of on or our so that the their them then there these they this to too us was we were what when which who will with you your'.split(' '),
);
const MAX_SENTENCES = 3;

function words(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((word) => word.length > 2 && !STOPWORDS.has(word));
}

/**
 * Built-in summarizer needing no service: picks the sentences carrying the conversation's most
 * frequent content words (frequency-weighted extraction), in their original order, with authors.
 * It cannot translate, so the summary stays in the conversation's language.
 */
export class ExtractiveSummarizer implements Summarizer {
  readonly name = 'extractive';

  async summarize(lines: TranscriptLine[], _language: string): Promise<Summary> {
    const sentences = lines.flatMap((line, lineIndex) =>
      line.text
        .split(/(?<=[.!?])\s+|\n+/)
        .map((sentence) => sentence.trim())
        .filter((sentence) => words(sentence).length >= 2)
        .map((sentence) => ({ author: line.author, sentence, order: lineIndex })),
    );
    const frequency = new Map<string, number>();
    for (const { sentence } of sentences) for (const word of new Set(words(sentence))) frequency.set(word, (frequency.get(word) ?? 0) + 1);
    const top = Math.max(1, ...frequency.values());
    const scored = sentences.map((s, index) => {
      const ws = words(s.sentence);
      // Average weight, so long sentences do not win by length alone.
      return { ...s, index, score: ws.reduce((sum, w) => sum + (frequency.get(w) ?? 0) / top, 0) / Math.sqrt(ws.length) };
    });
    const chosen = scored.sort((a, b) => b.score - a.score).slice(0, MAX_SENTENCES).sort((a, b) => a.index - b.index);
    const text = chosen.length === 0 ? 'Nothing to summarize yet.' : chosen.map((s) => `• ${s.author}: ${s.sentence}`).join('\n');
    return { text, language: 'und' };
  }
}
