/**
 * A `%%agent` cell run while another cell runs: answered beside it, on a kernel subshell.
 *
 * A kernel runs one cell at a time on its main shell, so a question about a long cell ("how is
 * the loss doing?") would wait until the answer no longer matters. A kernel with subshells
 * (JEP 91, ipykernel 7: `kernel subshells` in its `supported_features`) runs an
 * `execute_request` whose header carries a `subshell_id` on that subshell's own thread, at once;
 * the kernel's agent answers such a cell with read-only tools and says so
 * (`jupyter_agent/notebook/front/ask_beside.py`).
 *
 * The page decides where each execute request of its kernel goes, as the cell's own run sends
 * it (so the cell's outputs, prompt and execution count are the notebook's own machinery): an
 * agent cell run while the main shell is busy goes to one subshell the page creates for the
 * kernel; everything else goes where it always went. An agent cell that cannot go beside — no
 * subshells, the agent not loaded in the kernel, a cell that changes the chat, or a cell of this
 * page still waiting ahead of it (the user's order is kept) — waits on the main shell, and the
 * page shows "queued behind a running cell" on it until the kernel starts it.
 *
 * The main shell's state is read from the kernel's status messages whose parent request went to
 * the main shell: the connection's own status also follows subshells' (and JupyterLab sends
 * widget messages to subshells), so it reads idle whenever any of them ends. Status messages go
 * to every connection of the kernel, so a page that did not start the running cell — a console
 * on the notebook's kernel (`console.ts`) — knows it is busy all the same.
 */
import type { Cell } from '@jupyterlab/cells';
import { KernelMessage } from '@jupyterlab/services';
import type { Kernel } from '@jupyterlab/services';

/** The class of a cell whose run is being answered beside a running cell. */
export const BESIDE_CLASS = 'jp-agent-beside';
/** The class of an agent cell waiting behind a running cell, and of the note shown in it. */
export const QUEUED_CLASS = 'jp-agent-queued';
export const QUEUED_NOTE_CLASS = 'jp-agent-queued-note';
export const QUEUED_NOTE = 'Queued behind a running cell: it runs when that cell has finished.';

/** `%%agent` options that change the chat: the kernel refuses them beside a running cell. */
const CHAT_CHANGING = ['new', 'plan', 'system'];

/** Whether `source` is an agent cell: `%%agent ...` with a prompt, or one `%agent ask` line. */
export function isAgentSource(source: string): boolean {
  const lines = source.replace(/^\s*\n/, '').trimEnd().split('\n');
  const first = lines[0].trimEnd();
  if (/^%%agent(\s|$)/.test(first)) {
    return lines.slice(1).some(line => line.trim() !== '');
  }
  return lines.length === 1 && /^%agent\s+ask(\s|$)/.test(first.trimStart());
}

/** Whether an agent cell can be answered beside a running cell (it does not change the chat). */
export function movable(source: string): boolean {
  if (!isAgentSource(source)) {
    return false;
  }
  const first = source.replace(/^\s*\n/, '').split('\n')[0];
  if (!first.startsWith('%%agent')) {
    return true; // `%agent ask TEXT` takes no options: the rest is the question
  }
  for (const token of first.split(/\s+/).slice(1)) {
    if (!token.startsWith('--')) {
      continue;
    }
    const name = token.slice(2).split('=')[0];
    if (name && CHAT_CHANGING.some(option => option.startsWith(name))) {
      return false;
    }
  }
  return true;
}

/** What the page knows when a cell's execute request is about to be sent. */
export interface IRouteState {
  /** The cell's source (the request's `code`). */
  source: string;
  /** The kernel has jupyter_agent loaded (the co-author comm is open). */
  agentLoaded: boolean;
  /** The subshell the page made for answers beside, once the kernel made it. */
  subshell: string | null;
  /** The kernel's main shell is running a request now. */
  mainBusy: boolean;
  /** A main-shell execute request of this page has not started yet (it would run first). */
  waitingAhead: boolean;
}

/**
 * Where the request goes: `beside` (the subshell), `queued` (the main shell, behind a running
 * cell: the page says so) or `main` (the main shell, as always).
 */
export type Route = 'beside' | 'queued' | 'main';

export function route(state: IRouteState): Route {
  if (!isAgentSource(state.source)) {
    return 'main';
  }
  if (!state.mainBusy && !state.waitingAhead) {
    return 'main';
  }
  if (state.agentLoaded && state.subshell !== null && !state.waitingAhead) {
    return movable(state.source) ? 'beside' : 'queued';
  }
  return 'queued';
}

/** Whether a click on the agent's Stop button at `target` is in a cell answered beside. */
export function inBesideCell(target: EventTarget | null): boolean {
  return target instanceof Element && target.closest(`.jp-Cell.${BESIDE_CLASS}`) !== null;
}

type Execute = Kernel.IKernelConnection['requestExecute'];

/** The feature a kernel's `kernel_info_reply` lists when it has subshells (JEP 91). */
const SUBSHELLS = 'kernel subshells';

/**
 * Whether `kernel` has subshells: from the connection's own kernel info, or sooner from a
 * `kernel_info_request` on the control channel (answered while the main shell is busy).
 */
export function subshellsSupported(kernel: Kernel.IKernelConnection): Promise<boolean> {
  const fromShell = kernel.info.then(() => kernel.supportsSubshells);
  const fromControl = askOnControl(kernel).then(reply => {
    const content = reply.content as Partial<KernelMessage.IInfoReply>;
    return (content.supported_features ?? []).includes(SUBSHELLS);
  });
  // the shell's answer settles it (a kernel may not answer on control); control's can only
  // bring a yes forward
  return new Promise<boolean>(resolve => {
    fromShell.then(resolve, () => resolve(false));
    fromControl.then(
      supported => supported && resolve(true),
      () => undefined
    );
  });
}

/**
 * A `kernel_info_request` on the control channel, once the connection is connected: before
 * that, the connection refuses to send (or queue) an info request of anyone but its own.
 */
function askOnControl(kernel: Kernel.IKernelConnection): Promise<KernelMessage.IMessage> {
  const shellMsg = KernelMessage.createMessage<KernelMessage.IInfoRequestMsg>({
    msgType: 'kernel_info_request',
    channel: 'shell',
    username: kernel.username,
    session: kernel.clientId,
    content: {}
  });
  // the message types know it on the shell channel only; ipykernel's control channel takes
  // every shell request
  const msg = { ...shellMsg, channel: 'control' } as unknown as KernelMessage.IControlMessage;
  return new Promise<KernelMessage.IMessage>((resolve, reject) => {
    const send = (): void => {
      try {
        kernel.sendControlMessage(msg, true, true).done.then(resolve, reject);
      } catch (error) {
        reject(error);
      }
    };
    if (kernel.connectionStatus === 'connected') {
      send();
      return;
    }
    const onStatus = (_: unknown, status: Kernel.ConnectionStatus): void => {
      if (status === 'connected') {
        kernel.connectionStatusChanged.disconnect(onStatus);
        send();
      }
    };
    kernel.connectionStatusChanged.connect(onStatus);
  });
}

/** Kernels whose requests a router already routes (two views of one notebook share one). */
const routed = new WeakSet<Kernel.IKernelConnection>();

/** The cell of a notebook or console whose model has `id`, if the page shows it. */
export type CellFinder = (id: string) => Cell | null;

/**
 * One page's router (a notebook panel's, or a console's): sends its kernel connection's agent
 * cells beside a running cell, keeps track of the main shell, and tells `onMainIdle` when the
 * main shell (not a subshell) is idle.
 */
export class BesideRouter {
  constructor(
    findCell: CellFinder,
    agentLoaded: () => boolean,
    onMainIdle: () => void,
    onSubshell: (subshell: string | null) => void = () => undefined
  ) {
    this._findCell = findCell;
    this._onSubshell = onSubshell;
    this._agentLoaded = agentLoaded;
    this._onMainIdle = onMainIdle;
  }

  /** Route `kernel`'s execute requests (once per kernel connection). */
  hook(kernel: Kernel.IKernelConnection): void {
    this._kernel = kernel;
    this._reset();
    this._mainBusy = kernel.status === 'busy';
    // a page that connects while a cell runs has seen no status of that cell: it knows the main
    // shell is busy because the connection's own kernel_info_request, sent to the main shell,
    // has no answer while the control channel has answered
    this._infoPending = true;
    void kernel.info
      .catch(() => undefined)
      .finally(() => {
        if (kernel === this._kernel) {
          this._infoPending = false;
        }
      });
    kernel.iopubMessage.connect((sender, msg) => {
      if (sender === this._kernel) {
        this._onIOPub(msg);
      }
    }, this);
    kernel.statusChanged.connect((sender, status) => {
      if (sender === this._kernel && ['restarting', 'autorestarting', 'dead'].includes(status)) {
        this._reset();
      }
    }, this);
    if (routed.has(kernel)) {
      return;
    }
    routed.add(kernel);
    const original: Execute = kernel.requestExecute.bind(kernel);
    const requestExecute: Execute = (content, disposeOnDone, metadata) =>
      this._kernel === kernel
        ? this._execute(kernel, original, content, disposeOnDone, metadata)
        : original(content, disposeOnDone, metadata);
    kernel.requestExecute = requestExecute;
    this._ensureSubshell();
  }

  /**
   * Make the subshell answers go to, once per kernel (and again after a restart), as soon as
   * the kernel says it has subshells. JupyterLab makes its own for comms; this is one more idle
   * thread in the kernel.
   *
   * The connection learns what the kernel supports from a `kernel_info_request` on the shell
   * channel, which the main shell answers only after the cell it runs: a page that connects
   * while a long cell runs (a console opened to ask about it, a notebook reloaded) would have no
   * subshell until that cell ended. So the kernel is asked on the control channel too, which
   * answers at once, and the subshell is made with the first answer that lists subshells.
   */
  private _ensureSubshell(): void {
    const kernel = this._kernel;
    if (!kernel || this._subshell !== null || this._creating) {
      return;
    }
    this._creating = true;
    void subshellsSupported(kernel)
      .then(supported => {
        if (kernel !== this._kernel || !supported) {
          return;
        }
        this._supported = true;
        const msg = KernelMessage.createMessage<KernelMessage.ICreateSubshellRequestMsg>({
          msgType: 'create_subshell_request',
          channel: 'control',
          username: kernel.username,
          session: kernel.clientId,
          content: {}
        });
        return kernel.sendControlMessage(msg, true, true).done.then(reply => {
          const id: unknown = (reply.content as Partial<{ subshell_id: unknown }>).subshell_id;
          if (kernel === this._kernel && typeof id === 'string' && id) {
            this._subshell = id;
            this._onSubshell(id);
          }
        });
      })
      .catch(() => undefined) // no subshell: agent cells wait, as before
      .finally(() => {
        this._creating = false;
      });
  }

  private _execute(
    kernel: Kernel.IKernelConnection,
    original: Execute,
    content: KernelMessage.IExecuteRequestMsg['content'],
    disposeOnDone?: boolean,
    metadata?: KernelMessage.IExecuteRequestMsg['metadata']
  ): Kernel.IShellFuture<KernelMessage.IExecuteRequestMsg, KernelMessage.IExecuteReplyMsg> {
    const where = route({
      source: String(content.code ?? ''),
      agentLoaded: this._agentLoaded(),
      subshell: this._subshell,
      mainBusy: this._mainBusy || (this._infoPending && this._supported),
      waitingAhead: [...this._pending].some(id => !this._started.has(id))
    });
    const cell = this._cell(metadata);
    if (where === 'beside') {
      const msg = KernelMessage.createMessage<KernelMessage.IExecuteRequestMsg>({
        msgType: 'execute_request',
        channel: 'shell',
        username: kernel.username,
        session: kernel.clientId,
        subshellId: this._subshell,
        content: {
          silent: false,
          store_history: true,
          user_expressions: {},
          allow_stdin: true,
          stop_on_error: false,
          ...content
        },
        metadata
      });
      const future = kernel.sendShellMessage(msg, true, disposeOnDone) as Kernel.IShellFuture<
        KernelMessage.IExecuteRequestMsg,
        KernelMessage.IExecuteReplyMsg
      >;
      cell?.addClass(BESIDE_CLASS);
      void future.done.catch(() => undefined).finally(() => cell?.removeClass(BESIDE_CLASS));
      return future;
    }
    const future = original(content, disposeOnDone, metadata);
    const id = future.msg.header.msg_id;
    this._pending.add(id);
    if (where === 'queued' && cell) {
      this._queued.set(id, cell);
      cell.addClass(QUEUED_CLASS);
      const note = document.createElement('div');
      note.className = QUEUED_NOTE_CLASS;
      note.textContent = QUEUED_NOTE;
      cell.node.appendChild(note);
    }
    void future.done
      .catch(() => undefined)
      .finally(() => {
        this._pending.delete(id);
        this._started.delete(id);
        this._unqueue(id);
      });
    return future;
  }

  private _onIOPub(msg: KernelMessage.IIOPubMessage): void {
    if (msg.header.msg_type !== 'status') {
      return;
    }
    const parent = msg.parent_header as Partial<KernelMessage.IHeader>;
    if (parent.subshell_id || parent.msg_type !== 'execute_request') {
      // a subshell's request, or not a cell: "another cell is running" is what routing asks,
      // and a comm message's status (a widget click, the page answering the kernel) can come
      // from whichever thread ipykernel sends that comm's messages to — a busy of that kind
      // once stayed, and the next agent cell went beside a cell that was not running
      return;
    }
    const state = (msg as KernelMessage.IStatusMsg).content.execution_state;
    const id = parent.msg_id;
    if (state === 'busy') {
      this._mainBusy = true;
      if (id && this._pending.has(id)) {
        this._started.add(id);
        this._unqueue(id);
      }
    } else if (state === 'idle') {
      this._mainBusy = false;
      this._ensureSubshell(); // after a restart
      this._onMainIdle();
    }
  }

  private _unqueue(id: string): void {
    const cell = this._queued.get(id);
    if (cell) {
      this._queued.delete(id);
      cell.removeClass(QUEUED_CLASS);
      cell.node.querySelectorAll(`.${QUEUED_NOTE_CLASS}`).forEach(note => note.remove());
    }
  }

  /**
   * The cell a request runs, from the `cellId` JupyterLab and Notebook 7 put in its metadata (a
   * console's cells carry one too).
   */
  private _cell(metadata: KernelMessage.IExecuteRequestMsg['metadata'] | undefined): Cell | null {
    const id = metadata?.cellId;
    return typeof id === 'string' ? this._findCell(id) : null;
  }

  /** A new or restarted kernel: no subshell, nothing pending, the main shell's state unknown. */
  private _reset(): void {
    if (this._subshell !== null) {
      this._onSubshell(null);
    }
    this._subshell = null;
    this._supported = false;
    this._mainBusy = false;
    this._pending.clear();
    this._started.clear();
    for (const id of [...this._queued.keys()]) {
      this._unqueue(id);
    }
  }

  private _findCell: CellFinder;
  private _agentLoaded: () => boolean;
  private _onMainIdle: () => void;
  private _kernel: Kernel.IKernelConnection | null = null;
  private _subshell: string | null = null;
  private _creating = false;
  private _mainBusy = false;
  /** The connection's own kernel info has not come back from the main shell yet. */
  private _infoPending = false;
  /** The kernel said (on either channel) that it has subshells. */
  private _supported = false;
  private _onSubshell: (subshell: string | null) => void;
  /** Main-shell execute requests this page sent that have no reply yet. */
  private _pending = new Set<string>();
  /** Those the main shell has started. */
  private _started = new Set<string>();
  private _queued = new Map<string, Cell>();
}
