/**
 * jupyter-agent's notebook half.
 *
 * The kernel-side agent (the `jupyter_agent` IPython extension) cannot reach the notebook
 * document: only the frontend holds it, unsaved edits included. This plugin connects each open
 * notebook panel to its kernel's agent over a comm (target `jupyter_agent.notebook`), tells the
 * kernel what the notebook holds, and applies the agent's operations — insert, edit, run
 * (outputs placed), delete, undo — through the notebook model, the way a user's own edits are
 * made: never by rewriting the file on disk, never through a collaboration room.
 *
 * A plan's Go button (`button.jp-agent-go`, plain HTML the kernel shows under a `%%agent --plan`
 * answer) inserts a `%agent go --plan NONCE` cell right after the plan cell and runs it, so the
 * run has a cell. Only a button in a code cell's outputs, carrying the plan's nonce
 * (`data-agent-go`), is answered: a Markdown cell or any other output can show a `jp-agent-go`
 * button too, and the kernel runs the plan only for the nonce it made for it.
 *
 * The kernel announces itself (a comm opened on `jupyter_agent.hello` when the extension loads);
 * the panel also tries once when it meets a kernel, so a reloaded page reconnects to a kernel
 * that has the extension loaded already.
 */
import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { Cell, ICellModel, ICodeCellModel } from '@jupyterlab/cells';
import {
  INotebookTracker,
  NotebookActions,
  NotebookPanel
} from '@jupyterlab/notebook';
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { collabOutputs } from './collab_outputs';

const TARGET = 'jupyter_agent.notebook';
const HELLO = 'jupyter_agent.hello';
const AGENT_CLASS = 'jp-agent-cell';
const RUNNING_CLASS = 'jp-agent-running';
/** Characters of a cell's outputs the kernel is told about. */
const EXCERPT_CHARS = 600;
/** How long after the last change the notebook is announced again (ms). */
const ANNOUNCE_DELAY = 300;

type JSONObject = { [key: string]: any };

interface IStep {
  kind: 'insert' | 'edit' | 'delete';
  id: string;
  /** insert: the source inserted; edit: the source after the edit. */
  after?: string;
  /** edit: the source before. */
  before?: string;
  /** delete: the cell as it was, and where. */
  cell?: JSONObject;
  index?: number;
}

interface IEntry {
  /** The turn's key (the %%agent cell's execute_request), one entry per turn. */
  key: string;
  /** Its name: "cell N", N the %%agent cell's own number (the kernel renames it as it ends). */
  turn: string;
  /** When its first change was made (the kernel's clock, seconds). */
  at: number;
  steps: IStep[];
}

/** Whether a cell was written by the agent (its metadata says so). */
function isAgentCell(model: ICellModel): boolean {
  const meta = model.getMetadata('jupyter_agent') as JSONObject | undefined;
  return !!meta && meta.author === 'agent';
}

function clip(text: string, limit: number): string {
  return text.length <= limit ? text : text.slice(0, limit) + '…';
}

function outputExcerpt(model: ICellModel): string {
  if (model.type !== 'code') {
    return '';
  }
  const parts: string[] = [];
  const outputs = (model as ICodeCellModel).outputs;
  for (let i = 0; i < outputs.length; i++) {
    const out = outputs.get(i).toJSON() as JSONObject;
    if (out.output_type === 'stream') {
      const text = Array.isArray(out.text) ? out.text.join('') : String(out.text);
      parts.push(text);
    } else if (out.output_type === 'error') {
      parts.push(`${out.ename}: ${out.evalue}`);
    } else {
      const data = (out.data || {}) as JSONObject;
      const plain = data['text/plain'];
      const kinds = Object.keys(data).filter(k => k !== 'text/plain');
      const text = plain
        ? Array.isArray(plain)
          ? plain.join('')
          : String(plain)
        : '';
      parts.push(
        [text, kinds.length ? `[${kinds.join(', ')}]` : ''].filter(s => s).join(' ')
      );
    }
  }
  return clip(parts.join('\n'), EXCERPT_CHARS);
}

/**
 * The review's diff, as the kernel made it: `[kind, text]` rows, the text already made visible
 * there (control, bidi and zero-width characters as escapes, long lines wrapped) by the one
 * sanitising function (`jupyter_agent/notebook/inert.py`). Drawn as text, never as HTML.
 */
function renderDiff(rows: unknown): HTMLElement {
  const pre = document.createElement('pre');
  pre.className = 'jp-agent-diff-lines';
  const marks: { [kind: string]: string } = { same: ' ', del: '-', add: '+' };
  for (const row of Array.isArray(rows) ? rows : []) {
    const [kind, text] = Array.isArray(row) ? row : ['', ''];
    if (!(String(kind) in marks)) {
      continue;
    }
    const span = document.createElement('span');
    span.className = `jp-agent-diff-${kind}`;
    span.textContent = `${marks[String(kind)]} ${String(text)}\n`; // text, never HTML
    pre.appendChild(span);
  }
  return pre;
}

function countOccurrences(text: string, part: string): number {
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

/** One notebook panel's link to its kernel's agent. */
class CoAuthor {
  constructor(panel: NotebookPanel) {
    this._panel = panel;
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
    this._disconnect();
    kernel.registerCommTarget(HELLO, () => this._connect());
    kernel.statusChanged.connect((_, status) => {
      if (status === 'restarting' || status === 'dead' || status === 'autorestarting') {
        this._disconnect();
      }
      if (status === 'idle') {
        this._dismissReviews();
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
    comm.open({ type: 'hello', ...this._snapshot() });
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

  private _send(data: JSONObject): void {
    const comm = this._comm;
    if (comm && !comm.isDisposed) {
      comm.send(data);
    }
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

  private _snapshot(): JSONObject {
    const model = this._panel.content.model;
    const cells: JSONObject[] = [];
    if (model) {
      for (let i = 0; i < model.cells.length; i++) {
        const cell = model.cells.get(i);
        const source = cell.sharedModel.getSource();
        const count =
          cell.type === 'code' ? (cell as ICodeCellModel).executionCount : null;
        const ran = this._ranSource.get(cell.id);
        cells.push({
          id: cell.id,
          cell_type: cell.type,
          source,
          execution_count: count ?? null,
          edited: count !== null && ran !== undefined && ran !== source,
          outputs: outputExcerpt(cell),
          agent: isAgentCell(cell)
        });
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

  private _index(id: string): number {
    const model = this._panel.content.model;
    if (!model) {
      return -1;
    }
    for (let i = 0; i < model.cells.length; i++) {
      if (model.cells.get(i).id === id) {
        return i;
      }
    }
    return -1;
  }

  private _widget(id: string): Cell | null {
    return this._panel.content.widgets.find(w => w.model.id === id) ?? null;
  }

  private _entry(op: JSONObject): IEntry {
    const turn = String(op.turn ?? '');
    const key = String(op.turn_id || turn);
    const last = this._journal[this._journal.length - 1];
    if (last && last.key === key) {
      return last;
    }
    const entry = { key, turn, at: Number(op.at ?? 0), steps: [] as IStep[] };
    this._journal.push(entry);
    if (this._journal.length > 20) {
      this._journal.shift();
    }
    return entry;
  }

  private _onMsg(msg: KernelMessage.ICommMsgMsg): void {
    const data = msg.content.data as JSONObject;
    if (data.type !== 'op') {
      return;
    }
    let result: JSONObject;
    try {
      result = this._apply(data);
    } catch (err) {
      if (!data.noreply) {
        this._send({ type: 'reply', id: data.id, ok: false, error: String(err) });
      }
      return;
    }
    if (result.pending || data.noreply) {
      // a review: the reply comes when the user decides; noreply (a run's outputs, its end):
      // the kernel does not wait for it, and a reply carries the whole notebook
      return;
    }
    this._send({ type: 'reply', id: data.id, ok: true, ...result, ...this._snapshot() });
  }

  private _apply(op: JSONObject): JSONObject {
    const model = this._panel.content.model;
    if (!model) {
      throw new Error('the notebook is not loaded');
    }
    const shared = model.sharedModel;
    switch (op.op) {
      case 'snapshot':
        return {};
      case 'peek': {
        const top = this._journal[this._journal.length - 1];
        return top ? { turn: top.turn, at: top.at } : {};
      }
      case 'relabel': {
        // the turn ended: its entry is named as its %%agent cell shows itself now
        for (const entry of this._journal) {
          if (entry.key === String(op.turn_id)) {
            entry.turn = String(op.label);
          }
        }
        return {};
      }
      case 'insert': {
        let index = model.cells.length;
        if (op.after) {
          const at = this._index(op.after);
          if (at < 0) {
            throw new Error(`no cell with id ${op.after}`);
          }
          index = at + 1;
        }
        const cell = shared.insertCell(index, {
          cell_type: op.cell_type === 'markdown' ? 'markdown' : 'code',
          source: String(op.source),
          metadata: { jupyter_agent: { author: 'agent' } }
        });
        const id = cell.getId();
        this._entry(op).steps.push({ kind: 'insert', id, after: String(op.source) });
        this._markCells();
        const widget = this._widget(id);
        if (widget && widget.model.type === 'markdown') {
          (widget as any).rendered = true;
        }
        return { cell_id: id, index };
      }
      case 'edit': {
        const at = this._index(op.cell_id);
        if (at < 0) {
          throw new Error(`no cell with id ${op.cell_id}`);
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
        this._entry(op).steps.push({ kind: 'edit', id: op.cell_id, before, after });
        return { before, after };
      }
      case 'review':
        this._review(op);
        return { pending: true };
      case 'delete': {
        const at = this._index(op.cell_id);
        if (at < 0) {
          throw new Error(`no cell with id ${op.cell_id}`);
        }
        const json = shared.getCell(at).toJSON() as JSONObject;
        shared.deleteCell(at);
        this._entry(op).steps.push({ kind: 'delete', id: op.cell_id, cell: json, index: at });
        return { deleted: json };
      }
      case 'run_start': {
        const widget = this._widget(op.cell_id);
        const at = this._index(op.cell_id);
        if (at < 0 || !widget) {
          throw new Error(`no cell with id ${op.cell_id}`);
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
        const at = this._index(op.cell_id);
        const widget = this._widget(op.cell_id);
        if (op.op === 'run_end') {
          widget?.removeClass(RUNNING_CLASS);
          this._running = null;
        }
        if (at < 0) {
          throw new Error(`no cell with id ${op.cell_id}`);
        }
        const code = model.cells.get(at) as ICodeCellModel;
        code.outputs.clear();
        for (const output of op.outputs as JSONObject[]) {
          code.outputs.add(output as any);
        }
        if (op.op === 'run_end' && typeof op.execution_count === 'number') {
          code.executionCount = op.execution_count;
        }
        return {};
      }
      case 'undo':
        return this._undo();
      default:
        throw new Error(`unknown operation ${op.op}`);
    }
  }

  /** Show the proposed edit as a diff in the cell; reply when the user accepts or rejects. */
  private _review(op: JSONObject): void {
    const widget = this._widget(op.cell_id);
    if (!widget) {
      throw new Error(`no cell with id ${op.cell_id}`);
    }
    const before = widget.model.sharedModel.getSource();
    if (typeof op.before !== 'string' || before !== op.before) {
      // the diff was made on op.before: never shown over anything else
      throw new Error(`cell ${op.cell_id} changed since it was approved (the diff was made)`);
    }
    const box = document.createElement('div');
    box.className = 'jp-agent-diff';
    const title = document.createElement('div');
    title.className = 'jp-agent-diff-title';
    title.textContent = 'The agent proposes this edit:';
    box.appendChild(title);
    box.appendChild(renderDiff(op.lines));
    const decide = (accepted: boolean) => {
      box.remove();
      this._reviews.delete(String(op.id));
      // `before`: the source the diff was computed on; an accepted edit applies to it alone
      this._send({ type: 'reply', id: op.id, ok: true, accepted, before });
    };
    for (const [label, accepted] of [
      ['Accept', true],
      ['Reject', false]
    ] as [string, boolean][]) {
      const button = document.createElement('button');
      button.className = `jp-agent-diff-${label.toLowerCase()} jp-mod-styled`;
      button.textContent = label;
      button.onclick = () => decide(accepted);
      box.appendChild(button);
    }
    widget.node.appendChild(box);
    this._reviews.set(String(op.id), box);
    widget.node.scrollIntoView({ block: 'nearest' });
  }

  private _dismissReviews(): void {
    for (const box of this._reviews.values()) {
      box.remove();
    }
    this._reviews.clear();
    if (this._running) {
      this._widget(this._running)?.removeClass(RUNNING_CLASS);
      this._running = null;
    }
  }

  /** Put back what the newest journal entry changed, where nobody changed it since. */
  private _undo(): JSONObject {
    const entry = this._journal.pop();
    if (!entry) {
      return { undone: false, message: 'No cell changes of the agent to undo.' };
    }
    const shared = this._panel.content.model!.sharedModel;
    const restored: string[] = [];
    const skipped: string[] = [];
    for (const step of [...entry.steps].reverse()) {
      const at = this._index(step.id);
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
        cell.setSource(step.before ?? '');
        restored.push(`restored ${step.id}`);
      } else if (step.kind === 'delete') {
        if (at >= 0) {
          continue;
        }
        const index = Math.min(step.index ?? 0, shared.cells.length);
        shared.insertCell(index, step.cell as any);
        restored.push(`put back ${step.id}`);
      }
    }
    this._markCells();
    const parts = [`Undid the cell changes of ${entry.turn || 'the last agent cell'}.`];
    if (restored.length) {
      parts.push(`Cells: ${restored.join('; ')}.`);
    }
    if (skipped.length) {
      parts.push(`Not restored: ${skipped.join('; ')}.`);
    }
    return { undone: true, turn: entry.turn, message: parts.join(' '), restored, skipped };
  }

  /**
   * A plan's Go button: a `%agent go --plan NONCE` cell after the plan cell, run by the front
   * end. Only a button in a code cell's output area, with a nonce; the kernel checks the nonce.
   */
  private _maybeGo(event: MouseEvent): void {
    const target = event.target as HTMLElement | null;
    const button = target?.closest('button.jp-agent-go') as HTMLButtonElement | null;
    if (!button || button.disabled) {
      return;
    }
    const nonce = button.dataset.agentGo ?? '';
    if (!/^[0-9a-f]{32}$/.test(nonce)) {
      return;
    }
    const notebook = this._panel.content;
    const model = notebook.model;
    const host = button.closest('.jp-Cell');
    const plan = notebook.widgets.find(widget => widget.node === host);
    if (!model || !plan || plan.model.type !== 'code') {
      return;
    }
    const outputs = button.closest('.jp-OutputArea');
    if (!outputs || !plan.node.contains(outputs) || outputs.closest('.jp-Cell') !== host) {
      return;
    }
    event.preventDefault();
    event.stopPropagation();
    button.disabled = true;
    const index = this._index(plan.model.id);
    model.sharedModel.insertCell(index + 1, {
      cell_type: 'code',
      source: `%agent go --plan ${nonce}`,
      metadata: { jupyter_agent: { author: 'agent' } }
    });
    this._markCells();
    notebook.activeCellIndex = index + 1;
    void NotebookActions.run(notebook, this._panel.sessionContext);
  }

  /** The agent's Stop button during a run_cell: interrupt the kernel, as ■ would. */
  private _maybeStop(event: MouseEvent): void {
    if (!this._running) {
      return;
    }
    const target = event.target as HTMLElement | null;
    const button = target?.closest('button');
    if (button && button.textContent?.trim().startsWith('Stop')) {
      void this._kernel?.interrupt();
    }
  }

  private _panel: NotebookPanel;
  private _hooked: Kernel.IKernelConnection | null = null;
  private _comm: Kernel.IComm | null = null;
  private _announce: number | null = null;
  private _ranSource = new Map<string, string>();
  private _watched = new WeakSet<ICellModel>();
  private _journal: IEntry[] = [];
  private _reviews = new Map<string, HTMLElement>();
  private _running: string | null = null;
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-agent:coauthor',
  description: 'The agent inserts, edits and runs cells of the open notebook.',
  autoStart: true,
  requires: [INotebookTracker],
  activate: (_app: JupyterFrontEnd, tracker: INotebookTracker) => {
    tracker.widgetAdded.connect((_, panel) => {
      new CoAuthor(panel);
    });
  }
};

export default [plugin, collabOutputs];
