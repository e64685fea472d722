/**
 * The undo journal of the agent's cell changes, one entry per turn (`%agent undo`).
 *
 * It lives in the page, not the kernel: the page holds the notebook, and a journal here outlives
 * a kernel restart while the notebook is open. Undo puts back only what nobody changed since —
 * a cell the user edited after the agent wrote it is left as it is, and said so.
 *
 * It works on the notebook's shared model alone (`ISharedNotebook`), so it is tested against a
 * real one (`__tests__/journal.spec.ts`) without a JupyterLab page.
 */
import type { IBaseCell } from '@jupyterlab/nbformat';
import type { INotebookModel } from '@jupyterlab/notebook';
import type { IPeekResult, IUndoResult } from './protocol';

/** The notebook's shared model: its cells as the page and the file hold them. */
export type SharedNotebook = INotebookModel['sharedModel'];

/** How many turns the journal keeps (the oldest is forgotten). */
export const JOURNAL_TURNS = 20;

/** One change, as what undo needs to put it back. */
export type Step =
  /** `after`: the source inserted */
  | { kind: 'insert'; id: string; after: string }
  | { kind: 'edit'; id: string; before: string; after: string }
  /** `cell`: the cell as it was; `index`: where */
  | { kind: 'delete'; id: string; cell: IBaseCell; index: number };

/** Which turn a change belongs to, as its operation says. */
export interface ITurnOf {
  /** Its name: "cell N", N the %%agent cell's own number (renamed as the turn ends). */
  turn: string;
  /** Its key (the %%agent cell's execute_request); absent: the name is the key. */
  turn_id?: string;
  /** When its first change was made (the kernel's clock, seconds). */
  at?: number;
}

interface IEntry {
  key: string;
  turn: string;
  at: number;
  steps: Step[];
}

/** The index of the cell with id `id` in `shared`, or -1. */
export function cellIndex(shared: SharedNotebook, id: string): number {
  return shared.cells.findIndex(cell => cell.id === id);
}

export class Journal {
  /** Record `step` under its turn's entry: the newest if it is that turn's, else a new one. */
  record(op: ITurnOf, step: Step): void {
    const turn = String(op.turn ?? '');
    const key = String(op.turn_id || turn);
    let last = this._entries[this._entries.length - 1];
    if (!last || last.key !== key) {
      last = { key, turn, at: Number(op.at ?? 0), steps: [] };
      this._entries.push(last);
      if (this._entries.length > JOURNAL_TURNS) {
        this._entries.shift();
      }
    }
    last.steps.push(step);
  }

  /** The turn undo would take back, and when its first change was made; `{}` with none. */
  peek(): IPeekResult {
    const top = this._entries[this._entries.length - 1];
    return top ? { turn: top.turn, at: top.at } : {};
  }

  /** Name the entries of the turn `turnId` `label` (the turn ended). */
  relabel(turnId: string, label: string): void {
    for (const entry of this._entries) {
      if (entry.key === turnId) {
        entry.turn = label;
      }
    }
  }

  /** How many turns it holds. */
  get length(): number {
    return this._entries.length;
  }

  /** Put back what the newest entry changed in `shared`, where nobody changed it since. */
  undo(shared: SharedNotebook): IUndoResult {
    const entry = this._entries.pop();
    if (!entry) {
      return { undone: false, message: 'No cell changes of the agent to undo.' };
    }
    const restored: string[] = [];
    const skipped: string[] = [];
    for (const step of [...entry.steps].reverse()) {
      const at = cellIndex(shared, step.id);
      if (step.kind === 'insert') {
        if (at < 0) {
          continue; // gone already
        }
        if (shared.getCell(at).getSource() !== step.after) {
          // edited since: by the agent later in the same turn, or by the user
          const later = entry.steps.some(s => s.kind === 'edit' && s.id === step.id);
          if (!later) {
            skipped.push(`${step.id} (edited since)`);
            continue;
          }
        }
        shared.deleteCell(at);
        restored.push(`removed ${step.id}`);
      } else if (step.kind === 'edit') {
        if (at < 0) {
          skipped.push(`${step.id} (deleted since)`);
          continue;
        }
        const cell = shared.getCell(at);
        if (cell.getSource() !== step.after) {
          skipped.push(`${step.id} (edited since)`);
          continue;
        }
        cell.setSource(step.before);
        restored.push(`restored ${step.id}`);
      } else {
        if (at >= 0) {
          continue;
        }
        shared.insertCell(Math.min(step.index, shared.cells.length), step.cell);
        restored.push(`put back ${step.id}`);
      }
    }
    const parts = [`Undid the cell changes of ${entry.turn || 'the last agent cell'}.`];
    if (restored.length) {
      parts.push(`Cells: ${restored.join('; ')}.`);
    }
    if (skipped.length) {
      parts.push(`Not restored: ${skipped.join('; ')}.`);
    }
    return { undone: true, turn: entry.turn, message: parts.join(' '), restored, skipped };
  }

  private _entries: IEntry[] = [];
}
