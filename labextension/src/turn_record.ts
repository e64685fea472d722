/**
 * A finished `%%agent` cell keeps its turn's record in the cell, so running it again replays it.
 *
 * The kernel writes the record (`jupyter_agent.turn`, signed) in the metadata of the output that
 * carries the cell's answer: that is all nbclient and nbconvert can save. In a page, though, the
 * outputs are cleared as a cell starts running, before the kernel could ask for them — so the
 * page moves the record from that output into the cell's own metadata as it arrives (one copy:
 * the output's is dropped), and hands it to the kernel when the kernel asks (`turn_record`,
 * `protocol.ts`). When a record moves is `record_keeper.ts`'s business; what moving one does
 * is here.
 *
 * A record is replaced only by the record of a later turn. A run that ends without one — an
 * error, a stop, a replay that found the data changed — leaves the cell's record as it was: the
 * kernel replays a record only for the prompt it was made for, so a record of an old prompt never
 * replays, and a cell whose data changed keeps saying so until it is run with `--fresh`.
 */
import type { IOutput } from '@jupyterlab/nbformat';
import type { PartialJSONObject } from '@lumino/coreutils';

/** The key of a turn's record, in an output's metadata and in the cell's (SPEC). */
export const RECORD_KEY = 'jupyter_agent.turn';

/** A cell's outputs, as the page's cell model holds them (`IOutputAreaModel`). */
export interface IOutputList {
  readonly length: number;
  get(index: number): { toJSON(): IOutput };
  set(index: number, output: IOutput): void;
}

/** What moving a record needs of a code cell's model (`ICodeCellModel`). */
export interface IRecordCell {
  readonly outputs: IOutputList;
  getMetadata(key: string): unknown;
  setMetadata(key: string, value: unknown): void;
}

export function isRecord(value: unknown): value is PartialJSONObject {
  return !!value && typeof value === 'object' && !Array.isArray(value);
}

/** The record `output` carries, if any. */
export function outputRecord(output: IOutput): PartialJSONObject | null {
  const metadata = output.metadata;
  const record = isRecord(metadata) ? metadata[RECORD_KEY] : undefined;
  return isRecord(record) ? record : null;
}

/**
 * Move the record the cell's outputs carry into the cell's metadata (the last one, if several)
 * and drop it from each output that carries one. Whether anything moved.
 */
export function keepRecord(cell: IRecordCell): boolean {
  let kept: PartialJSONObject | null = null;
  const outputs = cell.outputs;
  for (let index = 0; index < outputs.length; index++) {
    const output = outputs.get(index).toJSON();
    if (!isRecord(output.metadata) || !(RECORD_KEY in output.metadata)) {
      continue;
    }
    kept = outputRecord(output) ?? kept;
    const metadata = { ...output.metadata };
    delete metadata[RECORD_KEY];
    outputs.set(index, { ...output, metadata });
  }
  if (kept === null) {
    return false;
  }
  cell.setMetadata(RECORD_KEY, kept);
  return true;
}

/** What the page answers to `turn_record`: the cell's record, else one its outputs still carry. */
export function cellRecord(cell: IRecordCell): PartialJSONObject | null {
  const own = cell.getMetadata(RECORD_KEY);
  if (isRecord(own)) {
    return own;
  }
  let found: PartialJSONObject | null = null;
  for (let index = 0; index < cell.outputs.length; index++) {
    found = outputRecord(cell.outputs.get(index).toJSON()) ?? found;
  }
  return found;
}
