/**
 * The buttons the kernel shows that the page answers itself, because the kernel cannot while
 * it is busy: the agent's Stop button during a `run_cell` (the page interrupts the kernel, as
 * the toolbar's ■ would), and a plan's Go button (the page inserts and runs the cell that runs
 * the plan, so the run has a cell).
 *
 * Each is matched by what the kernel put on it, never by its label: the Stop widget carries the
 * class `jp-agent-stop` (`jupyter_agent/notebook/views/render.py`), the Go button `jp-agent-go` and the
 * plan's nonce. Another button that says "Stop" — a user's own widget — interrupts nothing.
 */

/** The class of the agent's Stop button (an ipywidgets Button: the class is on the `<button>`). */
export const STOP_CLASS = 'jp-agent-stop';
/** The class of a plan's Go button; its `data-agent-go` holds the plan's nonce. */
export const GO_CLASS = 'jp-agent-go';

/** The agent's Stop button the event happened on, if it did. */
export function stopButton(target: EventTarget | null): HTMLButtonElement | null {
  if (!(target instanceof Element)) {
    return null;
  }
  return target.closest<HTMLButtonElement>(`button.${STOP_CLASS}`);
}

/** A click on a plan's Go button: the button, the plan's nonce, the cell it is in. */
export interface IGoClick {
  button: HTMLButtonElement;
  nonce: string;
  /** The node of the cell whose outputs show the button (`.jp-Cell`). */
  cell: Element;
}

/**
 * The Go button the event happened on, if it is one that counts: enabled, carrying a nonce,
 * in a cell's output area (a Markdown cell or a cell's source can show one too: not answered).
 * The kernel checks the nonce; the caller checks the cell is a code cell of its notebook.
 */
export function goButton(target: EventTarget | null): IGoClick | null {
  if (!(target instanceof Element)) {
    return null;
  }
  const button = target.closest<HTMLButtonElement>(`button.${GO_CLASS}`);
  if (!button || button.disabled) {
    return null;
  }
  const nonce = button.dataset.agentGo ?? '';
  if (!/^[0-9a-f]{32}$/.test(nonce)) {
    return null;
  }
  const cell = button.closest('.jp-Cell');
  const outputs = button.closest('.jp-OutputArea');
  if (!cell || !outputs || !cell.contains(outputs) || outputs.closest('.jp-Cell') !== cell) {
    return null;
  }
  return { button, nonce, cell };
}
