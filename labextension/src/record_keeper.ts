/**
 * When a cell's turn record moves into the cell (`turn_record.ts`): as the output carrying it
 * arrives from a run this page started, and just before a cell runs — a record still in an
 * output (a notebook executed by nbclient, then opened here) would be cleared with the outputs.
 *
 * Only the page whose kernel connection ran the cell moves the record: under real-time
 * collaboration every page sees the output arrive, and two pages replacing the same output at
 * once would leave it twice in the shared document. The cell's metadata and outputs are changed
 * through the cell's model, as the page's own edits are, so they reach the shared document (and
 * the other pages) once.
 */
import type { ICellModel, ICodeCellModel } from '@jupyterlab/cells';
import { NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import type { Kernel, KernelMessage } from '@jupyterlab/services';
import { isRecord, keepRecord, RECORD_KEY } from './turn_record';

/** How many runs of this page's cells are remembered until their end (a Run All's queue). */
const REMEMBERED_RUNS = 512;

/** The messages that can carry a record. */
const CARRIERS = new Set(['display_data', 'update_display_data', 'execute_result']);

/**
 * Keeps the records of one notebook panel's cells: moves a record into its cell as the output
 * carrying it arrives from a run this page started, and before a cell runs.
 */
export class RecordKeeper {
  constructor(panel: NotebookPanel) {
    this._panel = panel;
    panel.sessionContext.kernelChanged.connect(() => this._onKernel(), this);
    void panel.sessionContext.ready.then(() => this._onKernel());
    NotebookActions.executionScheduled.connect(this._onScheduled, this);
    panel.disposed.connect(() => {
      NotebookActions.executionScheduled.disconnect(this._onScheduled, this);
      this._unhook();
    });
  }

  private _onKernel(): void {
    const kernel = this._panel.sessionContext.session?.kernel ?? null;
    if (kernel === this._kernel) {
      return;
    }
    this._unhook();
    this._kernel = kernel;
    if (kernel) {
      kernel.anyMessage.connect(this._onAnyMessage, this);
      kernel.iopubMessage.connect(this._onIOPub, this);
    }
  }

  private _unhook(): void {
    if (this._kernel && !this._kernel.isDisposed) {
      this._kernel.anyMessage.disconnect(this._onAnyMessage, this);
      this._kernel.iopubMessage.disconnect(this._onIOPub, this);
    }
    this._kernel = null;
    this._runs.clear();
  }

  /** A cell is about to run (its outputs are cleared next): a record still in them is kept. */
  private _onScheduled(
    _: unknown,
    args: { notebook: unknown; cell: { model: ICellModel } }
  ): void {
    if (args.notebook === this._panel.content && args.cell.model.type === 'code') {
      keepRecord(args.cell.model as ICodeCellModel);
    }
  }

  /** Remember which cell each execute request this page sends runs (`cellId`, JupyterLab's). */
  private _onAnyMessage(_: Kernel.IKernelConnection, args: Kernel.IAnyMessageArgs): void {
    const msg = args.msg;
    if (args.direction !== 'send' || msg.header.msg_type !== 'execute_request') {
      return;
    }
    const cellId = (msg.metadata as { cellId?: unknown }).cellId;
    if (typeof cellId !== 'string') {
      return;
    }
    this._runs.set(msg.header.msg_id, cellId);
    if (this._runs.size > REMEMBERED_RUNS) {
      const oldest = this._runs.keys().next().value;
      if (oldest !== undefined) {
        this._runs.delete(oldest);
      }
    }
  }

  /**
   * An output of a run this page started, carrying a record: the output area has placed it in
   * the cell already (the kernel connection hands a message to the run's output area first), so
   * the record is moved now.
   */
  private _onIOPub(kernel: Kernel.IKernelConnection, msg: KernelMessage.IIOPubMessage): void {
    const parent = msg.parent_header as Partial<KernelMessage.IHeader>;
    const cellId = parent.msg_id !== undefined ? this._runs.get(parent.msg_id) : undefined;
    if (cellId === undefined || parent.session !== kernel.clientId) {
      return;
    }
    const type = msg.header.msg_type;
    if (type === 'status') {
      if ((msg.content as { execution_state?: unknown }).execution_state === 'idle') {
        this._runs.delete(parent.msg_id as string); // the run's outputs are all in
      }
      return;
    }
    const metadata = (msg.content as { metadata?: unknown }).metadata;
    if (!CARRIERS.has(type) || !isRecord(metadata) || !(RECORD_KEY in metadata)) {
      return;
    }
    const cell = this._cell(cellId);
    if (cell && keepRecord(cell)) {
      const count = Number(document.body.dataset.jupyterAgentRecordsKept ?? 0);
      document.body.dataset.jupyterAgentRecordsKept = String(count + 1); // for the tests
    }
  }

  private _cell(id: string): ICodeCellModel | null {
    const cells = this._panel.content.model?.cells;
    if (!cells) {
      return null;
    }
    for (let index = 0; index < cells.length; index++) {
      const cell = cells.get(index);
      if (cell.id === id && cell.type === 'code') {
        return cell as ICodeCellModel;
      }
    }
    return null;
  }

  private _panel: NotebookPanel;
  private _kernel: Kernel.IKernelConnection | null = null;
  /** The cell each of this page's runs that has not ended runs, by its request's id. */
  private _runs = new Map<string, string>();
}
