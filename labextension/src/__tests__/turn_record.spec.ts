/**
 * A turn's record moves from the answer's output into the cell, against a real shared cell
 * (`@jupyter/ydoc`'s YCodeCell: what the page's cell model writes to and the file is saved from).
 * The page's cell model is reached through `IRecordCell`; here the shared cell is, directly.
 */
import { YCodeCell, YNotebook } from '@jupyter/ydoc';
import type { IOutput } from '@jupyterlab/nbformat';
import {
  cellRecord,
  IRecordCell,
  keepRecord,
  outputRecord,
  RECORD_KEY
} from '../turn_record';

const made: YNotebook[] = [];

afterEach(() => {
  // a shared notebook's awareness keeps a timer: disposed, jest can end
  made.splice(0).forEach(notebook => notebook.dispose());
});

/** A shared code cell holding `outputs`, seen as the page's cell model shows it. */
function cell(...outputs: IOutput[]): { shared: YCodeCell; cell: IRecordCell } {
  const notebook = YNotebook.create({});
  made.push(notebook);
  const shared = notebook.insertCell(0, { cell_type: 'code', source: '%%agent\nHi' }) as YCodeCell;
  shared.setOutputs(outputs);
  return {
    shared,
    cell: {
      outputs: {
        get length() {
          return shared.getOutputs().length;
        },
        get: (index: number) => ({ toJSON: () => shared.getOutputs()[index] }),
        set: (index: number, output: IOutput) => shared.updateOutputs(index, index + 1, [output])
      },
      getMetadata: (key: string) => shared.getMetadata(key),
      setMetadata: (key: string, value: unknown) => shared.setMetadata(key, value as any)
    }
  };
}

const RECORD = { version: 1, prompt_digest: 'abc', replies: [{ text: 'hi' }], signature: 'sig' };

function answer(record?: object, text = 'the answer'): IOutput {
  const metadata: Record<string, unknown> = { 'text/html': { isolated: false } };
  if (record) {
    metadata[RECORD_KEY] = record;
  }
  return {
    output_type: 'display_data',
    data: { 'text/plain': text },
    metadata
  } as IOutput;
}

const STREAM: IOutput = { output_type: 'stream', name: 'stdout', text: 'working\n' };

describe('keepRecord', () => {
  it('moves the record from the answer into the cell, one copy, other outputs untouched', () => {
    const { shared, cell: model } = cell(STREAM, answer(RECORD));
    expect(keepRecord(model)).toBe(true);
    expect(shared.getMetadata(RECORD_KEY)).toEqual(RECORD);
    const outputs = shared.getOutputs();
    expect(outputs).toHaveLength(2);
    expect(outputs[0]).toEqual(STREAM);
    expect(outputs[1]).toEqual(answer()); // the rest of the output's metadata stays
    expect(JSON.stringify(shared.toJSON()).split('prompt_digest')).toHaveLength(2);
  });

  it('moves nothing from outputs without a record, and keeps the cell as it was', () => {
    const { shared, cell: model } = cell(STREAM, answer());
    shared.setMetadata(RECORD_KEY, RECORD);
    const before = shared.toJSON();
    expect(keepRecord(model)).toBe(false);
    expect(shared.toJSON()).toEqual(before); // a run without a record leaves the old one
  });

  it('replaces an older record with the newer one an output brings', () => {
    const newer = { ...RECORD, prompt_digest: 'def' };
    const { shared, cell: model } = cell(answer(newer));
    shared.setMetadata(RECORD_KEY, RECORD);
    keepRecord(model);
    expect(shared.getMetadata(RECORD_KEY)).toEqual(newer);
  });

  it('keeps the last of several records and drops every copy from the outputs', () => {
    const newer = { ...RECORD, prompt_digest: 'def' };
    const { shared, cell: model } = cell(answer(RECORD, 'one'), answer(newer, 'two'));
    keepRecord(model);
    expect(shared.getMetadata(RECORD_KEY)).toEqual(newer);
    expect(shared.getOutputs().map(outputRecord)).toEqual([null, null]);
  });

  it('drops a malformed record from the output without keeping it', () => {
    const { shared, cell: model } = cell(answer(['not', 'an', 'object']));
    shared.setMetadata(RECORD_KEY, RECORD);
    expect(keepRecord(model)).toBe(false);
    expect(shared.getMetadata(RECORD_KEY)).toEqual(RECORD);
    expect(shared.getOutputs()[0].metadata).toEqual({ 'text/html': { isolated: false } });
  });
});

describe('cellRecord', () => {
  it("answers the cell's record", () => {
    const { shared, cell: model } = cell(answer());
    shared.setMetadata(RECORD_KEY, RECORD);
    expect(cellRecord(model)).toEqual(RECORD);
  });

  it('answers a record an output still carries (executed elsewhere, not yet moved)', () => {
    expect(cellRecord(cell(STREAM, answer(RECORD)).cell)).toEqual(RECORD);
  });

  it('answers null for a cell without one, or with a record that is not an object', () => {
    expect(cellRecord(cell(STREAM).cell)).toBeNull();
    const { shared, cell: model } = cell();
    shared.setMetadata(RECORD_KEY, 'forged' as any);
    expect(cellRecord(model)).toBeNull();
  });
});
