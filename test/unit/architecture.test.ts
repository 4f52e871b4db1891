import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { filesUnder, projectRoot as root } from '../helpers/files.js';

const code = ['src', 'rest', 'realtime', 'workers'].flatMap((folder) => filesUnder(path.join(root, folder), '.ts')).map((file) => readFileSync(file, 'utf8'));

/** True when some file declares `class Name` with a method (or getter, or field) `member` in it. */
function exists(className: string, member: string): boolean {
  const declaresClass = new RegExp(`\\bclass ${className}\\b`);
  const declaresMember = new RegExp(`^\\s+(?:(?:public|private|protected|readonly|static|async|get|set)\\s+)*${member}\\s*[(<=:]`, 'm');
  return code.some((text) => declaresClass.test(text) && declaresMember.test(text.slice(text.search(declaresClass))));
}

describe('ARCHITECTURE.md stays true', () => {
  const page = readFileSync(path.join(root, 'ARCHITECTURE.md'), 'utf8');
  const names = [...page.matchAll(/`([A-Z][A-Za-z]+)\.([a-z][A-Za-z]+)`/g)].map((match) => [match[1]!, match[2]!] as const).filter(([name]) => name !== 'Class');
  const files = [...page.matchAll(/`([a-z][\w.-]*\/[\w./-]*)`/g)].map((match) => match[1]!).filter((file) => !/[<*]/.test(file));

  it('every Class.method it names exists in the code', () => {
    assert.ok(names.length >= 15, `only ${names.length} names found: the scan is broken`);
    assert.deepEqual(names.filter(([name, member]) => !exists(name, member)).map(([name, member]) => `${name}.${member}`), []);
  });

  it('every file and folder it names exists', () => {
    assert.ok(files.length >= 10, `only ${files.length} paths found: the scan is broken`);
    assert.deepEqual(files.filter((file) => !existsSync(path.join(root, file))), []);
  });

  it('the messages area is split by action: no service file of it over 250 lines', () => {
    const services = filesUnder(path.join(root, 'src', 'messages'), '.service.ts');
    assert.ok(services.length >= 4, `only ${services.length} service files found: the scan is broken`);
    const long = services.map((file) => [path.relative(root, file), readFileSync(file, 'utf8').split('\n').length] as const).filter(([, lines]) => lines > 250);
    assert.deepEqual(long.map(([file, lines]) => `${file}: ${lines} lines`), []);
  });

  it('the check sees a name that is gone (positive control)', () => {
    assert.equal(exists('RoomActivityRepo', 'append'), true);
    assert.equal(exists('RoomActivityRepo', 'nextSeq'), false);
    assert.equal(exists('Ledger', 'postAll'), true);
    assert.equal(exists('NoSuchClass', 'post'), false);
  });
});
