/**
 * One notebook panel's link to its kernel's agent: the comm, what the notebook holds, and the
 * buttons the page answers for the kernel.
 *
 * The kernel-side agent (the `jupyter_agent` IPython extension) cannot reach the notebook
 * document: only the page holds it, unsaved edits included. So each panel opens a comm to its
 * kernel (`protocol.ts`), tells the kernel what the notebook holds — as it opens and a moment
 * after each change — and applies the kernel's operations (`operations.ts`), replying to each.
 *
 * The kernel announces itself (a comm opened on `jupyter_agent.hello` when the extension loads);
 * the panel also tries once when it meets a kernel, so a reloaded page reconnects to a kernel
 * that has the extension loaded already. A page closed or reloaded mid-turn closes its comm, and
 * the kernel fails that turn's cell tools at once.
 */
import type { ICellModel, ICodeCellModel } from '@jupyterlab/cells';
import { NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import type { Kernel, KernelMessage } from '@jupyterlab/services';
import { BesideRouter, inBesideCell } from './beside';
import { goButton, stopButton } from './buttons';
import { cellIndex } from './journal';
import { CellOperations, OperationResult } from './operations';
import {
  asJSON,
  HELLO,
  ICellInfo,
  INotebookSnapshot,
  Operation,
  PageMessage,
  TARGET
} from './protocol';
import { cellInfo, isAgentCell, METADATA_KEY } from './snapshot';

/** The class of a cell the agent wrote. */
const AGENT_CLASS = 'jp-agent-cell';
/** How long after the last change the notebook is announced again (ms). */
const ANNOUNCE_DELAY = 300;

export class CoAuthor {
  constructor(panel: NotebookPanel) {
    this._panel = panel;
    this._ops = new CellOperations(
      panel,
      () => this._markCells(),
      reply => this._send(reply)
    );
    // an agent cell run while another cell runs goes to a subshell; the main shell's idle (not
    // a subshell's) is the one that ends what the kernel was doing
    this._beside = new BesideRouter(
      id => panel.content.widgets.find(widget => widget.model.id === id) ?? null,
      () => this._comm !== null,
      () => this._ops.dismiss()
    );
    panel.sessionContext.kernelChanged.connect(() => this._onKernel(), this);
    void panel.sessionContext.ready.then(() => this._onKernel());
    void panel.context.ready.then(() => {
      this._rememberRuns();
      this._markCells();
      const model = panel.content.model;
      if (model) {
        model.contentChanged.connect(() => this._changed(), this);
        model.cells.changed.connect(() => this._markCells(), this);
      }
    });
    panel.node.addEventListener('click', event => this._maybeStop(event), true);
    panel.node.addEventListener('click', event => this._maybeGo(event), true);
    panel.disposed.connect(() => {
      window.removeEventListener('pagehide', this._leave);
      this._disconnect();
    });
    // a page closed or reloaded mid-turn: the kernel fails that turn's cell tools at once
    window.addEventListener('pagehide', this._leave);
  }

  private _leave = (): void => this._disconnect();

  private get _kernel(): Kernel.IKernelConnection | null {
    return this._panel.sessionContext.session?.kernel ?? null;
  }

  private _onKernel(): void {
    const kernel = this._kernel;
    if (!kernel || kernel === this._hooked) {
      return;
    }
    this._hooked = kernel;
    this._beside.hook(kernel);
    this._disconnect();
    kernel.registerCommTarget(HELLO, () => this._connect());
    kernel.statusChanged.connect((_, status) => {
      if (status === 'restarting' || status === 'dead' || status === 'autorestarting') {
        this._disconnect();
      }
    }, this);
    this._connect();
  }

  /** Open the comm; a kernel without the extension loaded closes it at once. */
  private _connect(): void {
    const kernel = this._kernel;
    if (!kernel) {
      return;
    }
    this._disconnect();
    const comm = kernel.createComm(TARGET);
    this._comm = comm;
    comm.onMsg = msg => this._onMsg(msg);
    comm.onClose = () => {
      if (this._comm === comm) {
        this._comm = null;
        this._panel.node.removeAttribute('data-jupyter-agent');
      }
    };
    comm.open(asJSON({ type: 'hello', ...this._snapshot() }));
    this._panel.node.setAttribute('data-jupyter-agent', 'connected');
  }

  private _disconnect(): void {
    const comm = this._comm;
    this._comm = null;
    this._panel.node.removeAttribute('data-jupyter-agent');
    if (comm && !comm.isDisposed) {
      try {
        comm.close();
      } catch {
        // the kernel went away
      }
    }
  }

  private _send(message: PageMessage): void {
    const comm = this._comm;
    if (comm && !comm.isDisposed) {
      comm.send(asJSON(message));
    }
  }

  private _onMsg(msg: KernelMessage.ICommMsgMsg): void {
    const data = msg.content.data as unknown as Operation | { type?: unknown };
    if (data.type !== 'op') {
      return;
    }
    const op = data as Operation;
    let result: OperationResult;
    try {
      result = this._ops.apply(op);
    } catch (err) {
      if (!op.noreply) {
        this._send({ type: 'reply', id: op.id, ok: false, error: String(err) });
      }
      return;
    }
    if (result === null || op.noreply) {
      // a review: the reply comes when the user decides; noreply (a run's outputs, its end):
      // the kernel does not wait for it, and a reply carries the whole notebook
      return;
    }
    this._send({ type: 'reply', id: op.id, ok: true, ...result, ...this._snapshot() });
  }

  private _changed(): void {
    if (!this._comm) {
      return;
    }
    if (this._announce !== null) {
      window.clearTimeout(this._announce);
    }
    this._announce = window.setTimeout(() => {
      this._announce = null;
      this._send({ type: 'cells', ...this._snapshot() });
    }, ANNOUNCE_DELAY);
  }

  private _snapshot(): INotebookSnapshot {
    const model = this._panel.content.model;
    const cells: ICellInfo[] = [];
    if (model) {
      for (let i = 0; i < model.cells.length; i++) {
        const cell = model.cells.get(i);
        cells.push(cellInfo(cell, this._ranSource.get(cell.id)));
      }
    }
    return { path: this._panel.context.path, cells };
  }

  /** Cells loaded with an execution count count as run with the source they have. */
  private _rememberRuns(): void {
    const model = this._panel.content.model;
    if (!model) {
      return;
    }
    for (let i = 0; i < model.cells.length; i++) {
      this._watchCell(model.cells.get(i));
    }
    model.cells.changed.connect((_, change) => {
      if (change.type === 'add') {
        for (const cell of change.newValues) {
          this._watchCell(cell);
        }
      }
    }, this);
  }

  private _watchCell(cell: ICellModel): void {
    if (cell.type !== 'code' || this._watched.has(cell)) {
      return;
    }
    this._watched.add(cell);
    const code = cell as ICodeCellModel;
    if (code.executionCount !== null) {
      this._ranSource.set(cell.id, cell.sharedModel.getSource());
    }
    code.stateChanged.connect((_, change) => {
      if (change.name === 'executionCount' && change.newValue !== null) {
        this._ranSource.set(cell.id, cell.sharedModel.getSource());
      }
    }, this);
  }

  private _markCells(): void {
    for (const widget of this._panel.content.widgets) {
      widget.toggleClass(AGENT_CLASS, isAgentCell(widget.model));
    }
  }

  /**
   * A plan's Go button: a `%agent go --plan NONCE` cell after the plan cell, run by the page.
   * Only a button in a code cell's output area, with a nonce; the kernel checks the nonce.
   */
  private _maybeGo(event: MouseEvent): void {
    const go = goButton(event.target);
    if (!go) {
      return;
    }
    const notebook = this._panel.content;
    const model = notebook.model;
    const plan = notebook.widgets.find(widget => widget.node === go.cell);
    if (!model || !plan || plan.model.type !== 'code') {
      return;
    }
    event.preventDefault();
    event.stopPropagation();
    go.button.disabled = true;
    const index = cellIndex(model.sharedModel, plan.model.id);
    model.sharedModel.insertCell(index + 1, {
      cell_type: 'code',
      source: `%agent go --plan ${go.nonce}`,
      metadata: { [METADATA_KEY]: { author: 'agent' } }
    });
    this._markCells();
    notebook.activeCellIndex = index + 1;
    void NotebookActions.run(notebook, this._panel.sessionContext);
  }

  /**
   * The agent's Stop button during a run_cell: interrupt the kernel, as ■ would. Not the Stop
   * of an answer beside a running cell: the kernel ends that answer itself, and an interrupt
   * would end the running cell.
   */
  private _maybeStop(event: MouseEvent): void {
    if (this._ops.running && stopButton(event.target) && !inBesideCell(event.target)) {
      void this._kernel?.interrupt();
    }
  }

  private _panel: NotebookPanel;
  private _ops: CellOperations;
  private _beside: BesideRouter;
  private _hooked: Kernel.IKernelConnection | null = null;
  private _comm: Kernel.IComm | null = null;
  private _announce: number | null = null;
  private _ranSource = new Map<string, string>();
  private _watched = new WeakSet<ICellModel>();
}
