/**
 * `%agent ask` typed in a JupyterLab console while a cell runs: answered beside it.
 *
 * A console on a notebook's kernel (File > New Console for Notebook), or any console on a kernel,
 * is a page of its own: its own connection to the kernel, whose execute requests wait on the
 * main shell behind whatever runs there — the notebook's long cell. The question typed in the
 * console is about that cell, so each console gets the notebook's router (`beside.ts`, one
 * owner of the decision): an agent line or cell run while the main shell is busy goes to a
 * subshell and is answered at once, in the console; one that cannot go says it is queued.
 *
 * The router asks whether the kernel has the agent loaded (an agent cell is only sent beside to
 * a kernel whose agent answers it there). A notebook knows from its co-author comm; a console
 * has none, so it counts the kernel as loaded when a notebook page on the same kernel is
 * connected to its agent, or, since the kernel last started, it saw the kernel announce the agent
 * (the hello comm, opened on every connection's IOPub as `%load_ext jupyter_agent` runs) or an
 * agent line of its own ran without error.
 */
import type { Cell } from '@jupyterlab/cells';
import type { ConsolePanel } from '@jupyterlab/console';
import type { INotebookTracker } from '@jupyterlab/notebook';
import type { Kernel, KernelMessage } from '@jupyterlab/services';
import { BesideRouter, isAgentSource } from './beside';
import { HELLO } from './protocol';

/** The attribute a notebook panel carries while its co-author comm is open (`coauthor.ts`). */
const CONNECTED = 'data-jupyter-agent';
/** The attribute a console panel carries while its kernel has the subshell answers go to. */
const BESIDE_READY = 'data-jupyter-agent-beside';

/** What a console knows of a notebook page on the same server: its kernel, and its comm. */
export interface INotebookLink {
  kernelId: string | undefined;
  /** The page's co-author comm to its kernel's agent is open. */
  connected: boolean;
}

/**
 * Whether the kernel `kernelId` of a console answers agent cells beside a running cell: the
 * console saw the kernel announce its agent since the kernel last started, or a notebook page
 * on that kernel is connected to the agent.
 */
export function consoleAgentLoaded(
  kernelId: string,
  sawHello: boolean,
  notebooks: INotebookLink[]
): boolean {
  return sawHello || notebooks.some(link => link.kernelId === kernelId && link.connected);
}

/**
 * Follows a connection's messages for an agent line or cell that the kernel ran without error:
 * the agent is loaded (a console reloaded after `%load_ext` learns it from its first question).
 */
export class AgentAnswers {
  /** `msg`, sent or received on the connection; whether it is such a reply. */
  answered(msg: KernelMessage.IMessage, direction: 'send' | 'recv'): boolean {
    if (direction === 'send') {
      if (msg.header.msg_type === 'execute_request') {
        const code = (msg as KernelMessage.IExecuteRequestMsg).content.code;
        if (isAgentSource(String(code ?? ''))) {
          this._asked.add(msg.header.msg_id);
        }
      }
      return false;
    }
    if (msg.header.msg_type !== 'execute_reply') {
      return false;
    }
    const parent = (msg.parent_header as Partial<KernelMessage.IHeader>).msg_id ?? '';
    if (!this._asked.delete(parent)) {
      return false;
    }
    return (msg as KernelMessage.IExecuteReplyMsg).content.status === 'ok';
  }

  private _asked = new Set<string>();
}

/** Whether an IOPub message is the kernel announcing its agent (`%load_ext jupyter_agent`). */
export function isAgentHello(msg: KernelMessage.IMessage): boolean {
  return (
    msg.header.msg_type === 'comm_open' &&
    msg.channel === 'iopub' &&
    (msg as KernelMessage.ICommOpenMsg<'iopub'>).content.target_name === HELLO
  );
}

export class ConsoleBeside {
  constructor(panel: ConsolePanel, notebooks: INotebookTracker | null) {
    this._panel = panel;
    this._notebooks = notebooks;
    this._router = new BesideRouter(
      id => this._findCell(id),
      () => this._agentLoaded(),
      () => undefined,
      subshell => {
        // what the browser tests wait for (a console's first question goes beside once it is)
        if (subshell === null) {
          panel.node.removeAttribute(BESIDE_READY);
        } else {
          panel.node.setAttribute(BESIDE_READY, 'ready');
        }
      }
    );
    panel.sessionContext.kernelChanged.connect(() => this._onKernel(), this);
    void panel.sessionContext.ready.then(() => this._onKernel());
  }

  private get _kernel(): Kernel.IKernelConnection | null {
    return this._panel.sessionContext.session?.kernel ?? null;
  }

  private _onKernel(): void {
    const kernel = this._kernel;
    if (!kernel || kernel === this._hooked) {
      return;
    }
    this._hooked = kernel;
    this._hello = false;
    this._router.hook(kernel);
    // every message the connection receives (`iopubMessage` is never emitted for a comm_open
    // whose target the page has not registered — the hello, in a console), and the replies
    const answers = new AgentAnswers();
    kernel.anyMessage.connect((sender, args) => {
      if (sender !== this._hooked) {
        return;
      }
      if (args.direction === 'recv' && isAgentHello(args.msg)) {
        this._hello = true;
      } else if (answers.answered(args.msg, args.direction)) {
        this._hello = true;
      }
    }, this);
    kernel.statusChanged.connect((sender, status) => {
      if (sender === this._hooked && ['restarting', 'autorestarting', 'dead'].includes(status)) {
        this._hello = false;
      }
    }, this);
  }

  /** Whether the kernel's agent answers an agent cell beside a running cell. */
  private _agentLoaded(): boolean {
    const kernel = this._hooked;
    if (!kernel) {
      return false;
    }
    const notebooks: INotebookLink[] = [];
    this._notebooks?.forEach(notebook => {
      notebooks.push({
        kernelId: notebook.sessionContext.session?.kernel?.id,
        connected: notebook.node.getAttribute(CONNECTED) === 'connected'
      });
    });
    return consoleAgentLoaded(kernel.id, this._hello, notebooks);
  }

  /** The console cell a request runs (it has left the prompt for the console's cells). */
  private _findCell(id: string): Cell | null {
    const console = this._panel.console;
    for (let index = console.cells.length - 1; index >= 0; index--) {
      const cell = console.cells.get(index);
      if (cell.model.id === id) {
        return cell;
      }
    }
    const prompt = console.promptCell;
    return prompt && prompt.model.id === id ? prompt : null;
  }

  private _panel: ConsolePanel;
  private _notebooks: INotebookTracker | null;
  private _router: BesideRouter;
  private _hooked: Kernel.IKernelConnection | null = null;
  /** The agent was seen loaded on this connection since the kernel last started. */
  private _hello = false;
}
