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
 * connected to its agent, or when it saw the kernel announce the agent (the hello comm, opened
 * on every connection's IOPub as `%load_ext jupyter_agent` runs) since the kernel last started.
 */
import type { Cell } from '@jupyterlab/cells';
import type { ConsolePanel } from '@jupyterlab/console';
import type { INotebookTracker } from '@jupyterlab/notebook';
import type { Kernel, KernelMessage } from '@jupyterlab/services';
import { BesideRouter } from './beside';
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

/** Whether an IOPub message is the kernel announcing its agent (`%load_ext jupyter_agent`). */
export function isAgentHello(msg: KernelMessage.IIOPubMessage): boolean {
  return (
    msg.header.msg_type === 'comm_open' &&
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
    kernel.iopubMessage.connect((sender, msg) => {
      if (sender === this._hooked) {
        this._onIOPub(msg);
      }
    }, this);
    kernel.statusChanged.connect((sender, status) => {
      if (sender === this._hooked && ['restarting', 'autorestarting', 'dead'].includes(status)) {
        this._hello = false;
      }
    }, this);
  }

  private _onIOPub(msg: KernelMessage.IIOPubMessage): void {
    if (isAgentHello(msg)) {
      this._hello = true;
    }
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
  private _hello = false;
}
