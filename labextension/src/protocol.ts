/**
 * The comm protocol between the kernel's agent and this extension, as types.
 *
 * The page opens a comm on `jupyter_agent.notebook` and announces its notebook (`IHello`, then
 * `ICellsAnnouncement` after each change); the kernel sends operations (`Operation`: an
 * `IEnvelope` around one `OperationBody`), and the page answers each with a reply (`ISuccess`
 * plus the operation's result from `IResults` plus the notebook, or `IFailure`) unless the
 * operation says `noreply`. A review's reply comes when the user decides, without the notebook.
 *
 * Why typed: both ends are ours and were written apart. The kernel's side mirrors every
 * interface below under the same name without the `I` (`jupyter_agent/notebook/coauthor/comm_protocol.py`),
 * and `tests/notebook/coauthor/test_comm_protocol.py` reads this file and fails when an operation, a
 * field, whether it is optional, or a literal differs between the two. So keep the form the
 * test reads: one field per line, `export interface` / `export type` at the start of a line.
 */
import type { IBaseCell, IOutput } from '@jupyterlab/nbformat';
import type { PartialJSONObject } from '@lumino/coreutils';
import type { KernelMessage } from '@jupyterlab/services';

/** The comm the page opens to its kernel's agent. */
export const TARGET = 'jupyter_agent.notebook';
/** The comm the kernel opens as the extension loads, so open notebooks connect. */
export const HELLO = 'jupyter_agent.hello';

// -- what the page tells the kernel about its notebook --------------------------------------

/** One cell, as the kernel is told about it. */
export interface ICellInfo {
  id: string;
  cell_type: string;
  source: string;
  execution_count: number | null;
  /** Run, and its source changed since. */
  edited: boolean;
  /** An excerpt of its outputs, as text. */
  outputs: string;
  /** Written by the agent (its metadata says so). */
  agent: boolean;
}

/** The notebook as the page holds it, unsaved edits included. */
export interface INotebookSnapshot {
  path: string;
  cells: ICellInfo[];
}

/** The comm's opening message. */
export interface IHello extends INotebookSnapshot {
  type: 'hello';
}

/** Sent a moment after each change of the notebook. */
export interface ICellsAnnouncement extends INotebookSnapshot {
  type: 'cells';
}

/** What the kernel sends on the hello comm (target `HELLO`). */
export interface IKernelHello {
  version: number;
}

// -- operations (kernel → page) --------------------------------------------------------------

export type CellType = 'code' | 'markdown';

/** The kind of one row of a review's diff. */
export type DiffKind = 'same' | 'del' | 'add';

/** One row of a review's diff: its kind and its text, made visible by the kernel. */
export type DiffRow = [DiffKind, string];

/** Every operation's envelope, added by the kernel as it sends one. */
export interface IEnvelope {
  type: 'op';
  id: number;
  /** The kernel does not wait: no reply (a run's outputs, its end, a relabel). */
  noreply?: boolean;
}

/** Added by the kernel to each operation that names its turn (a change to the notebook). */
export interface IStamp {
  /** The turn's key: its %%agent cell's execute_request. */
  turn_id: string;
  /** When (the kernel's clock, seconds). */
  at: number;
}

/** The notebook as it is. */
export interface ISnapshotOp {
  op: 'snapshot';
}

/** The turn the undo journal's newest entry belongs to. */
export interface IPeekOp {
  op: 'peek';
}

/** The turn ended: its journal entry is named as its %%agent cell shows itself now. */
export interface IRelabelOp {
  op: 'relabel';
  turn_id: string;
  label: string;
}

export interface IInsertOp {
  op: 'insert';
  turn: string;
  source: string;
  cell_type: CellType;
  /** The cell to insert after; none: at the end. */
  after?: string | null;
}

/** Replace `old_string`, which must occur once, by `new_string`. */
export interface IEditOp {
  op: 'edit';
  turn: string;
  cell_id: string;
  old_string: string;
  new_string: string;
  /** The source the user approved the diff on: the edit applies to that or not at all. */
  expect?: string;
}

/** Show a proposed edit as a diff in the cell; reply when the user accepts or rejects. */
export interface IReviewOp {
  op: 'review';
  cell_id: string;
  /** The source the diff was made on: never shown over anything else. */
  before: string;
  lines: DiffRow[];
}

export interface IDeleteOp {
  op: 'delete';
  turn: string;
  cell_id: string;
}

/** The kernel runs the cell: its outputs cleared, the cell marked as running. */
export interface IRunStartOp {
  op: 'run_start';
  turn: string;
  cell_id: string;
  /** The source the user approved running: nothing runs when the cell holds another. */
  expect?: string;
}

/** A running cell's outputs so far. */
export interface IOutputsOp {
  op: 'outputs';
  cell_id: string;
  outputs: IOutput[];
}

/** A run ended: its outputs and execution count. */
export interface IRunEndOp {
  op: 'run_end';
  cell_id: string;
  outputs: IOutput[];
  execution_count?: number;
}

/** Put back what the journal's newest entry changed. */
export interface IUndoOp {
  op: 'undo';
}

/**
 * The record of the cell's last finished turn (`jupyter_agent.turn` in its metadata), which the
 * kernel replays when the cell runs again with the same prompt (`turn_record.ts`).
 */
export interface ITurnRecordOp {
  op: 'turn_record';
  cell_id: string;
}

/** An operation as the kernel's code writes it. */
export type OperationBody =
  | ISnapshotOp
  | IPeekOp
  | IRelabelOp
  | IInsertOp
  | IEditOp
  | IReviewOp
  | IDeleteOp
  | IRunStartOp
  | IOutputsOp
  | IRunEndOp
  | IUndoOp
  | ITurnRecordOp;

export type OperationName = OperationBody['op'];

/** An operation that names its turn carries the kernel's stamp too. */
type Stamped<T> = T extends { turn: string } ? T & IStamp : T;

/** An operation as the page receives it. */
export type Operation = IEnvelope & Stamped<OperationBody>;

/** The operation named `N`, as received. */
export type OperationOf<N extends OperationName> = Extract<Operation, { op: N }>;

// -- replies (page → kernel) -----------------------------------------------------------------

/** An empty result. */
export interface INoResult {}

export interface IPeekResult {
  /** Absent with an empty journal. */
  turn?: string;
  at?: number;
}

export interface IInsertResult {
  cell_id: string;
  index: number;
}

export interface IEditResult {
  before: string;
  after: string;
}

/** The user's decision on a review. */
export interface IReviewResult {
  accepted: boolean;
  /** The source the diff was made on: an accepted edit applies to it alone. */
  before: string;
}

export interface IDeleteResult {
  /** The cell as it was. */
  deleted: IBaseCell;
}

export interface IRunStartResult {
  /** The source the cell holds: what the kernel runs (unless it approved another). */
  source: string;
}

export interface IUndoResult {
  undone: boolean;
  message: string;
  turn?: string;
  restored?: string[];
  skipped?: string[];
}

export interface ITurnRecordResult {
  /** The cell's record as the page holds it, unchecked (the kernel verifies its signature). */
  record: PartialJSONObject | null;
}

/** Each operation's result. */
export interface IResults {
  snapshot: INoResult;
  peek: IPeekResult;
  relabel: INoResult;
  insert: IInsertResult;
  edit: IEditResult;
  review: IReviewResult;
  delete: IDeleteResult;
  run_start: IRunStartResult;
  outputs: INoResult;
  run_end: INoResult;
  undo: IUndoResult;
  turn_record: ITurnRecordResult;
}

export interface ISuccess {
  type: 'reply';
  id: number;
  ok: true;
}

export interface IFailure {
  type: 'reply';
  id: number;
  ok: false;
  error: string;
}

/** The reply to an operation named `N`: a review's without the notebook (it may be late). */
export type Reply<N extends OperationName> =
  | (N extends 'review'
      ? ISuccess & IResults[N]
      : ISuccess & IResults[N] & INotebookSnapshot)
  | IFailure;

/** Everything the page sends on the comm. */
export type PageMessage =
  | IHello
  | ICellsAnnouncement
  | Reply<OperationName>;

/** What a comm message carries: JSON. */
export type CommData = KernelMessage.ICommMsgMsg['content']['data'];

/**
 * `message` as the comm sends it. Every type above is JSON by construction, but TypeScript does
 * not see an interface as one (it has no index signature): this is the one place that says so.
 */
export function asJSON(message: PageMessage): CommData {
  return message as unknown as CommData;
}
