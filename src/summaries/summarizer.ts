export interface TranscriptLine {
  author: string;
  text: string;
}

export interface Summary {
  text: string;
  /** The language the summary is written in. */
  language: string;
}

/** Summarizes a stretch of conversation, in `language` where the summarizer can. */
export interface Summarizer {
  readonly name: string;
  summarize(lines: TranscriptLine[], language: string): Promise<Summary>;
}
