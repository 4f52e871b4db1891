import { open } from 'node:fs/promises';

/** How many bytes of a file the sniffer reads. */
export const SNIFF_BYTES = 64;

/** A type the file's own first bytes prove, or octet-stream: the uploader's declared type is never used. */
export const UNKNOWN_TYPE = 'application/octet-stream';

const ascii = (bytes: Buffer, at: number, text: string) => bytes.length >= at + text.length && bytes.toString('latin1', at, at + text.length) === text;
const starts = (bytes: Buffer, ...values: number[]) => values.every((value, i) => bytes[i] === value);

/** ISO base media brands (the `ftyp` box): which are images, which audio, the rest video. */
const HEIF_BRANDS = new Set(['heic', 'heix', 'hevc', 'heim', 'heis', 'mif1', 'msf1']);
const AVIF_BRANDS = new Set(['avif', 'avis']);
const AUDIO_BRANDS = new Set(['M4A ', 'M4B ', 'M4P ', 'F4A ']);

/**
 * The media type of a file from its first bytes (magic numbers), for the formats members send and
 * phones play: images, audio and video, and PDF. Anything else, HTML, SVG and scripts among them, is
 * `application/octet-stream`: the service never serves what it cannot recognise as anything but a
 * download.
 */
export function sniffContentType(bytes: Buffer): string {
  if (starts(bytes, 0xff, 0xd8, 0xff)) return 'image/jpeg';
  if (starts(bytes, 0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return 'image/png';
  if (ascii(bytes, 0, 'GIF87a') || ascii(bytes, 0, 'GIF89a')) return 'image/gif';
  if (ascii(bytes, 0, 'RIFF') && ascii(bytes, 8, 'WEBP')) return 'image/webp';
  if (ascii(bytes, 0, 'RIFF') && ascii(bytes, 8, 'WAVE')) return 'audio/wav';
  if (ascii(bytes, 0, 'RIFF') && ascii(bytes, 8, 'AVI ')) return 'video/x-msvideo';
  if (ascii(bytes, 0, 'BM') && bytes.length >= 14) return 'image/bmp';
  if (starts(bytes, 0x49, 0x49, 0x2a, 0x00) || starts(bytes, 0x4d, 0x4d, 0x00, 0x2a)) return 'image/tiff';
  if (ascii(bytes, 4, 'ftyp')) {
    const brand = bytes.toString('latin1', 8, 12);
    if (HEIF_BRANDS.has(brand)) return 'image/heic';
    if (AVIF_BRANDS.has(brand)) return 'image/avif';
    if (AUDIO_BRANDS.has(brand)) return 'audio/mp4';
    if (brand === 'qt  ') return 'video/quicktime';
    if (brand.startsWith('3g')) return 'video/3gpp';
    return 'video/mp4';
  }
  if (starts(bytes, 0x1a, 0x45, 0xdf, 0xa3)) return bytes.includes('webm', 0, 'latin1') ? 'video/webm' : 'video/x-matroska';
  if (ascii(bytes, 0, 'OggS')) return 'audio/ogg';
  if (ascii(bytes, 0, 'fLaC')) return 'audio/flac';
  if (ascii(bytes, 0, '#!AMR')) return 'audio/amr';
  if (ascii(bytes, 0, 'ID3')) return 'audio/mpeg';
  // MPEG audio frame sync (11 bits) with layer III or II, and ADTS AAC (layer 00).
  if (bytes[0] === 0xff && bytes.length > 1 && (bytes[1]! & 0xe0) === 0xe0) return (bytes[1]! & 0x06) === 0 ? 'audio/aac' : 'audio/mpeg';
  if (starts(bytes, 0x00, 0x00, 0x01, 0xba) || starts(bytes, 0x00, 0x00, 0x01, 0xb3)) return 'video/mpeg';
  if (starts(bytes, 0x30, 0x26, 0xb2, 0x75, 0x8e, 0x66, 0xcf, 0x11)) return 'video/x-ms-wmv';
  if (ascii(bytes, 0, '%PDF-')) return 'application/pdf';
  return UNKNOWN_TYPE;
}

/** Sniffs a staged file's first bytes. */
export async function sniffFile(file: string): Promise<string> {
  const handle = await open(file, 'r');
  try {
    const buffer = Buffer.alloc(SNIFF_BYTES);
    const { bytesRead } = await handle.read(buffer, 0, SNIFF_BYTES, 0);
    return sniffContentType(buffer.subarray(0, bytesRead));
  } finally {
    await handle.close();
  }
}

/**
 * The types served inline (shown in the page or player): images a browser decodes without running
 * anything, audio and video. SVG is not among them (it carries script). Everything else is a download.
 */
const INLINE_TYPES = new Set([
  'image/jpeg', 'image/png', 'image/gif', 'image/webp', 'image/avif', 'image/bmp',
  'audio/mpeg', 'audio/mp4', 'audio/aac', 'audio/ogg', 'audio/wav', 'audio/flac', 'audio/webm',
  'video/mp4', 'video/webm', 'video/quicktime',
]);

/** Whether a stored type is served inline; every other file is served as a download of octet-stream. */
export function servedInline(contentType: string): boolean {
  return INLINE_TYPES.has(contentType);
}

/**
 * A file name as stored: control characters (a NUL among them) and the bidirectional overrides that
 * make `txt.exe` read `exe.txt` removed, surrounding space trimmed, at most 255 characters; `file`
 * when nothing is left.
 */
export function cleanFileName(name: string): string {
  // eslint-disable-next-line no-control-regex
  const cleaned = name.replace(/[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, '').trim();
  return [...cleaned].slice(0, 255).join('') || 'file';
}
