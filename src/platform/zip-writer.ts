import { createReadStream } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { crc32, deflateRawSync } from 'node:zlib';

interface Entry {
  name: Buffer;
  method: 0 | 8;
  crc: number;
  compressed: number;
  size: number;
  offset: number;
}

/** The largest archive and entry this writer makes (it writes no ZIP64 records). */
const ZIP32_LIMIT = 0xffff_fffe;

/**
 * Writes a ZIP archive (PKWARE APPNOTE 6.3: local headers, central directory, end record; UTF-8
 * names) to a file, one entry after another: JSON documents deflated from memory, and files copied
 * from disk as they are (stored), streamed so a large upload is never held whole. No ZIP64: an
 * archive stays under 4 GiB and 65,535 entries, and says so if it would not.
 */
export class ZipWriter {
  private offset = 0;
  private readonly entries: Entry[] = [];
  private readonly stamp: { time: number; date: number };

  private constructor(
    private readonly handle: FileHandle,
    at: Date,
  ) {
    this.stamp = {
      time: (at.getUTCHours() << 11) | (at.getUTCMinutes() << 5) | Math.floor(at.getUTCSeconds() / 2),
      date: ((at.getUTCFullYear() - 1980) << 9) | ((at.getUTCMonth() + 1) << 5) | at.getUTCDate(),
    };
  }

  static async create(path: string, at: Date): Promise<ZipWriter> {
    return new ZipWriter(await open(path, 'w'), at);
  }

  /** An entry from memory, deflated when that makes it smaller. */
  async addBuffer(name: string, data: Buffer): Promise<void> {
    const deflated = deflateRawSync(data);
    const method = deflated.length < data.length ? 8 : 0;
    const body = method === 8 ? deflated : data;
    await this.writeEntry(name, method, crc32(data), body.length, data.length, async () => this.write(body));
  }

  /** An entry copied from a file on disk, stored as it is (media files are compressed already). */
  async addFile(name: string, path: string): Promise<void> {
    let crc = 0;
    let size = 0;
    for await (const chunk of createReadStream(path)) {
      crc = crc32(chunk as Buffer, crc);
      size += (chunk as Buffer).length;
    }
    await this.writeEntry(name, 0, crc, size, size, async () => {
      for await (const chunk of createReadStream(path)) await this.write(chunk as Buffer);
    });
  }

  /** The central directory and the end record; closes the file. */
  async close(): Promise<void> {
    try {
      const start = this.offset;
      for (const entry of this.entries) {
        const header = Buffer.alloc(46);
        header.writeUInt32LE(0x02014b50, 0);
        header.writeUInt16LE(20, 4);
        header.writeUInt16LE(20, 6);
        header.writeUInt16LE(0x0800, 8);
        header.writeUInt16LE(entry.method, 10);
        header.writeUInt16LE(this.stamp.time, 12);
        header.writeUInt16LE(this.stamp.date, 14);
        header.writeUInt32LE(entry.crc, 16);
        header.writeUInt32LE(entry.compressed, 20);
        header.writeUInt32LE(entry.size, 24);
        header.writeUInt16LE(entry.name.length, 28);
        header.writeUInt32LE(entry.offset, 42);
        await this.write(Buffer.concat([header, entry.name]));
      }
      const end = Buffer.alloc(22);
      end.writeUInt32LE(0x06054b50, 0);
      end.writeUInt16LE(this.entries.length, 8);
      end.writeUInt16LE(this.entries.length, 10);
      end.writeUInt32LE(this.offset - start, 12);
      end.writeUInt32LE(start, 16);
      await this.write(end);
    } finally {
      await this.handle.close();
    }
  }

  /** Closes the file without finishing it (the caller removes it). */
  async abandon(): Promise<void> {
    await this.handle.close();
  }

  private async writeEntry(name: string, method: 0 | 8, crc: number, compressed: number, size: number, writeBody: () => Promise<void>): Promise<void> {
    if (this.entries.length >= 0xffff || this.offset + compressed > ZIP32_LIMIT) throw new Error('zip: the archive would need ZIP64 (over 65,535 entries or 4 GiB)');
    const encoded = Buffer.from(name, 'utf8');
    const header = Buffer.alloc(30);
    header.writeUInt32LE(0x04034b50, 0);
    header.writeUInt16LE(20, 4);
    header.writeUInt16LE(0x0800, 6);
    header.writeUInt16LE(method, 8);
    header.writeUInt16LE(this.stamp.time, 10);
    header.writeUInt16LE(this.stamp.date, 12);
    header.writeUInt32LE(crc, 14);
    header.writeUInt32LE(compressed, 18);
    header.writeUInt32LE(size, 22);
    header.writeUInt16LE(encoded.length, 26);
    this.entries.push({ name: encoded, method, crc, compressed, size, offset: this.offset });
    await this.write(Buffer.concat([header, encoded]));
    await writeBody();
  }

  private async write(data: Buffer): Promise<void> {
    await this.handle.write(data);
    this.offset += data.length;
  }
}
