import type { Summarizer, Summary, TranscriptLine } from './summarizer.js';
import { z } from 'zod';

/** The part of a chat completion answer the summarizer reads. */
const ChatCompletionSchema = z.object({ choices: z.array(z.object({ message: z.object({ content: z.string().optional() }).optional() })).optional() });

/** Any OpenAI-compatible chat completions endpoint (OpenAI, vLLM, llama.cpp server, Ollama…). */
export class OpenAiCompatibleSummarizer implements Summarizer {
  readonly name = 'openai';

  constructor(private readonly options: { baseUrl: string; apiKey?: string; model: string; timeoutMs?: number }) {}

  async summarize(lines: TranscriptLine[], language: string): Promise<Summary> {
    const transcript = lines.map((line) => `${line.author}: ${line.text}`).join('\n');
    const response = await fetch(`${this.options.baseUrl.replace(/\/$/, '')}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(this.options.apiKey ? { authorization: `Bearer ${this.options.apiKey}` } : {}) },
      body: JSON.stringify({
        model: this.options.model,
        temperature: 0.2,
        messages: [
          { role: 'system', content: `Summarize this chat conversation in at most five short bullet points. Write in the language with code "${language}". Do not invent facts.` },
          { role: 'user', content: transcript },
        ],
      }),
      signal: AbortSignal.timeout(this.options.timeoutMs ?? 30_000),
    });
    if (!response.ok) throw new Error(`summarizer endpoint answered ${response.status}`);
    const body = ChatCompletionSchema.safeParse(await response.json()).data ?? {};
    const text = body.choices?.[0]?.message?.content?.trim();
    if (!text) throw new Error('summarizer endpoint gave no text');
    return { text, language };
  }
}
