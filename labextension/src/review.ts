/**
 * The review of a proposed edit: its diff shown in the cell with Accept and Reject, the user's
 * decision sent back as the operation's reply.
 *
 * The diff comes made by the kernel: `[kind, text]` rows whose text is already visible there
 * (control, bidi and zero-width characters as escapes, long lines wrapped) by the one sanitising
 * function (`jupyter_agent/notebook/inert.py`). It is drawn as text, never as HTML.
 */
import type { DiffKind, IReviewOp, IReviewResult, ISuccess } from './protocol';

const MARKS: { [kind in DiffKind]: string } = { same: ' ', del: '-', add: '+' };

function isDiffKind(kind: string): kind is DiffKind {
  return Object.prototype.hasOwnProperty.call(MARKS, kind);
}

/** The diff's rows as a `<pre>` of text; a row that is not `[kind, text]` is left out. */
export function renderDiff(rows: unknown): HTMLElement {
  const pre = document.createElement('pre');
  pre.className = 'jp-agent-diff-lines';
  for (const row of Array.isArray(rows) ? rows : []) {
    const [kind, text] = Array.isArray(row) ? row : ['', ''];
    const name = String(kind);
    if (!isDiffKind(name)) {
      continue;
    }
    const span = document.createElement('span');
    span.className = `jp-agent-diff-${name}`;
    span.textContent = `${MARKS[name]} ${String(text)}\n`; // text, never HTML
    pre.appendChild(span);
  }
  return pre;
}

/** The review box: a title, the diff, Accept and Reject; `decide` is called with the choice. */
export function reviewBox(rows: unknown, decide: (accepted: boolean) => void): HTMLElement {
  const box = document.createElement('div');
  box.className = 'jp-agent-diff';
  const title = document.createElement('div');
  title.className = 'jp-agent-diff-title';
  title.textContent = 'The agent proposes this edit:';
  box.appendChild(title);
  box.appendChild(renderDiff(rows));
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
  return box;
}

/** The reply to a review, sent when the user decides. */
export type ReviewReply = ISuccess & IReviewResult;

/** The reviews shown in one notebook, until decided or dismissed. */
export class Reviews {
  /**
   * Show `op`'s diff at the end of the cell node `node`, whose source is `source` now; `answer`
   * gets the reply when the user decides. Refused when the cell no longer holds the source the
   * diff was made on.
   */
  show(
    node: HTMLElement,
    source: string,
    op: IReviewOp & { id: number },
    answer: (reply: ReviewReply) => void
  ): void {
    if (typeof op.before !== 'string' || source !== op.before) {
      // the diff was made on op.before: never shown over anything else
      throw new Error(`cell ${op.cell_id} changed since it was approved (the diff was made)`);
    }
    const key = String(op.id);
    const box = reviewBox(op.lines, accepted => {
      box.remove();
      this._shown.delete(key);
      // `before`: the source the diff was computed on; an accepted edit applies to it alone
      answer({ type: 'reply', id: op.id, ok: true, accepted, before: source });
    });
    node.appendChild(box);
    this._shown.set(key, box);
    node.scrollIntoView?.({ block: 'nearest' });
  }

  /** How many are shown. */
  get size(): number {
    return this._shown.size;
  }

  /** Take every review away, undecided (the kernel went idle: nobody waits for them). */
  dismiss(): void {
    for (const box of this._shown.values()) {
      box.remove();
    }
    this._shown.clear();
  }

  private _shown = new Map<string, HTMLElement>();
}
