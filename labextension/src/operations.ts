/**
 * The kernel's operations applied to one notebook: insert, edit, delete, run (outputs placed),
 * review, undo — through the notebook model, the way a user's own edits are made: never by
 * rewriting the file on disk, never through a collaboration room.
 *
 * `turn_record` reads a cell's record of its last turn (`turn_record.ts`) for a re-run.
 *
 * Each change is recorded in the undo journal under its turn. A cell the agent inserted carries
 * `{"jupyter_agent": {"author": "agent"}}` in its metadata (the page marks it); a cell the kernel
 * runs is marked as running until its run ends or the kernel goes idle.
 */
import type { Cell, ICodeCellModel, MarkdownCell } from '@jupyterlab/cells';
import type { NotebookPanel } from '@jupyterlab/notebook';
import { cellIndex, Journal } from './journal';
import type { IResults, Operation, OperationName } from './protocol';
import { Reviews, ReviewReply } from './review';
import { METADATA_KEY } from './snapshot';
import { cellRecord } from './turn_record';

/** The class of a cell the kernel is running for the agent. */
export const RUNNING_CLASS = 'jp-agent-running';

/** An operation's result; `null`: a review, whose reply comes when the user decides. */
export type OperationResult = IResults[OperationName] | null;

/** How many times `part` occurs in `text`, without overlaps (0 for an empty `part`). */
export function countOccurrences(text: string, part: string): number {
  if (!part) {
    return 0;
  }
  let count = 0;
  let at = text.indexOf(part);
  while (at !== -1) {
    count++;
    at = text.indexOf(part, at + part.length);
  }
  return count;
}

function noCell(id: string): Error {
  return new Error(`no cell with id ${id}`);
}

export class CellOperations {
  /**
   * @param markCells - marks the cells the agent wrote, after a change
   * @param answer - sends a review's reply when the user decides
   */
  constructor(
    panel: NotebookPanel,
    markCells: () => void,
    answer: (reply: ReviewReply) => void
  ) {
    this._panel = panel;
    this._markCells = markCells;
    this._answer = answer;
  }

  readonly journal = new Journal();
  readonly reviews = new Reviews();

  /** The cell the kernel runs now, if any. */
  get running(): string | null {
    return this._running;
  }

  /** Apply `op`; its result, or `null` for a review. Throws what the kernel is told. */
  apply(op: Operation): OperationResult {
    const model = this._panel.content.model;
    if (!model) {
      throw new Error('the notebook is not loaded');
    }
    const shared = model.sharedModel;
    switch (op.op) {
      case 'snapshot':
        return {};
      case 'peek':
        return this.journal.peek();
      case 'relabel':
        this.journal.relabel(String(op.turn_id), String(op.label));
        return {};
      case 'insert': {
        let index = model.cells.length;
        if (op.after) {
          const at = cellIndex(shared, op.after);
          if (at < 0) {
            throw noCell(op.after);
          }
          index = at + 1;
        }
        const source = String(op.source);
        const cell = shared.insertCell(index, {
          cell_type: op.cell_type === 'markdown' ? 'markdown' : 'code',
          source,
          metadata: { [METADATA_KEY]: { author: 'agent' } }
        });
        const id = cell.getId();
        this.journal.record(op, { kind: 'insert', id, after: source });
        this._markCells();
        const widget = this._widget(id);
        if (widget && widget.model.type === 'markdown') {
          (widget as MarkdownCell).rendered = true;
        }
        return { cell_id: id, index };
      }
      case 'edit': {
        const at = cellIndex(shared, op.cell_id);
        if (at < 0) {
          throw noCell(op.cell_id);
        }
        const cell = shared.getCell(at);
        const before = cell.getSource();
        if (typeof op.expect === 'string' && before !== op.expect) {
          // the diff the user accepted was computed on op.expect: apply that diff or nothing
          throw new Error(
            `cell ${op.cell_id} changed since it was approved (by the user or another edit), ` +
              'so the accepted diff was not applied; read the cell again and propose the edit anew'
          );
        }
        const count = countOccurrences(before, op.old_string);
        if (count !== 1) {
          throw new Error(
            count === 0
              ? 'old_string is not in the cell (it may have been edited since)'
              : `old_string occurs ${count} times in the cell; give more context`
          );
        }
        const start = before.indexOf(op.old_string);
        cell.updateSource(start, start + op.old_string.length, op.new_string);
        const after = cell.getSource();
        this.journal.record(op, { kind: 'edit', id: op.cell_id, before, after });
        return { before, after };
      }
      case 'review': {
        const widget = this._widget(op.cell_id);
        if (!widget) {
          throw noCell(op.cell_id);
        }
        const source = widget.model.sharedModel.getSource();
        this.reviews.show(widget.node, source, op, this._answer);
        return null;
      }
      case 'delete': {
        const at = cellIndex(shared, op.cell_id);
        if (at < 0) {
          throw noCell(op.cell_id);
        }
        const cell = shared.getCell(at).toJSON();
        shared.deleteCell(at);
        this.journal.record(op, { kind: 'delete', id: op.cell_id, cell, index: at });
        return { deleted: cell };
      }
      case 'run_start': {
        const widget = this._widget(op.cell_id);
        const at = cellIndex(shared, op.cell_id);
        if (at < 0 || !widget) {
          throw noCell(op.cell_id);
        }
        const cell = model.cells.get(at);
        if (cell.type !== 'code') {
          throw new Error(`cell ${op.cell_id} is a ${cell.type} cell, not code`);
        }
        const source = cell.sharedModel.getSource();
        if (typeof op.expect === 'string' && source !== op.expect) {
          throw new Error(`cell ${op.cell_id} changed since it was approved`);
        }
        const code = cell as ICodeCellModel;
        code.outputs.clear();
        code.executionCount = null;
        widget.addClass(RUNNING_CLASS);
        this._running = op.cell_id;
        return { source };
      }
      case 'outputs':
      case 'run_end': {
        const at = cellIndex(shared, op.cell_id);
        if (op.op === 'run_end') {
          this._widget(op.cell_id)?.removeClass(RUNNING_CLASS);
          this._running = null;
        }
        if (at < 0) {
          throw noCell(op.cell_id);
        }
        const code = model.cells.get(at) as ICodeCellModel;
        code.outputs.clear();
        for (const output of op.outputs) {
          code.outputs.add(output);
        }
        if (op.op === 'run_end' && typeof op.execution_count === 'number') {
          code.executionCount = op.execution_count;
        }
        return {};
      }
      case 'turn_record': {
        // the page's record of the cell, unchecked: the kernel verifies it before replaying
        const at = cellIndex(shared, op.cell_id);
        const cell = at < 0 ? null : model.cells.get(at);
        return { record: cell?.type === 'code' ? cellRecord(cell as ICodeCellModel) : null };
      }
      case 'undo': {
        const result = this.journal.undo(shared);
        this._markCells();
        return result;
      }
      default:
        throw new Error(`unknown operation ${(op as { op: unknown }).op}`);
    }
  }

  /** The kernel went idle: reviews nobody waits for are taken away, no cell is running. */
  dismiss(): void {
    this.reviews.dismiss();
    if (this._running) {
      this._widget(this._running)?.removeClass(RUNNING_CLASS);
      this._running = null;
    }
  }

  private _widget(id: string): Cell | null {
    return this._panel.content.widgets.find(w => w.model.id === id) ?? null;
  }

  private _panel: NotebookPanel;
  private _markCells: () => void;
  private _answer: (reply: ReviewReply) => void;
  private _running: string | null = null;
}
