/**
 * @jest-environment jsdom
 *
 * The review's diff is drawn as text from the kernel's rows, and the user's decision becomes
 * the review's reply; a cell that changed since the diff was made is never shown it.
 */
import type { IReviewOp } from '../protocol';
import { renderDiff, ReviewReply, Reviews } from '../review';

function review(before: string, id = 7): IReviewOp & { id: number } {
  return {
    id,
    op: 'review',
    cell_id: 'c1',
    before,
    lines: [
      ['same', 'x = 1'],
      ['del', 'y = 2'],
      ['add', 'y = 3']
    ]
  };
}

describe('renderDiff', () => {
  it('draws each row as a marked line of its kind', () => {
    const pre = renderDiff(review('').lines);
    expect(pre.tagName).toBe('PRE');
    expect(pre.textContent).toBe('  x = 1\n- y = 2\n+ y = 3\n');
    expect(Array.from(pre.children).map(span => span.className)).toEqual([
      'jp-agent-diff-same',
      'jp-agent-diff-del',
      'jp-agent-diff-add'
    ]);
  });

  it('draws markup as text, never as HTML', () => {
    const pre = renderDiff([['add', '<img src=x onerror="alert(1)"><b>bold</b>']]);
    expect(pre.querySelector('img, b')).toBeNull();
    expect(pre.textContent).toBe('+ <img src=x onerror="alert(1)"><b>bold</b>\n');
  });

  it('leaves out rows that are not [kind, text] of a known kind', () => {
    const rows = [
      ['same', 'kept'],
      ['toString', 'inherited names are no kinds'],
      ['constructor', 'nor this'],
      ['bogus', 'unknown'],
      'not a row',
      null
    ];
    expect(renderDiff(rows).textContent).toBe('  kept\n');
    expect(renderDiff('not rows').childElementCount).toBe(0);
    expect(renderDiff(undefined).childElementCount).toBe(0);
  });
});

describe('Reviews', () => {
  let cell: HTMLElement;
  let replies: ReviewReply[];
  let reviews: Reviews;

  beforeEach(() => {
    cell = document.createElement('div');
    document.body.appendChild(cell);
    replies = [];
    reviews = new Reviews();
  });

  afterEach(() => cell.remove());

  const click = (label: string) =>
    cell.querySelector<HTMLButtonElement>(`button.jp-agent-diff-${label}`)!.click();

  it('shows the diff with Accept and Reject in the cell', () => {
    reviews.show(cell, 'x = 1\ny = 2', review('x = 1\ny = 2'), reply => replies.push(reply));
    const box = cell.querySelector('.jp-agent-diff')!;
    expect(box.querySelector('.jp-agent-diff-title')!.textContent).toBe(
      'The agent proposes this edit:'
    );
    expect(box.querySelector('pre')!.textContent).toBe('  x = 1\n- y = 2\n+ y = 3\n');
    expect(Array.from(box.querySelectorAll('button')).map(b => b.textContent)).toEqual([
      'Accept',
      'Reject'
    ]);
    expect(reviews.size).toBe(1);
    expect(replies).toEqual([]);
  });

  it.each([
    ['accept', true],
    ['reject', false]
  ])('%s: replies with the decision and the source the diff was made on', (label, accepted) => {
    reviews.show(cell, 'y = 2', review('y = 2', 12), reply => replies.push(reply));
    click(label);
    expect(replies).toEqual([{ type: 'reply', id: 12, ok: true, accepted, before: 'y = 2' }]);
    expect(cell.querySelector('.jp-agent-diff')).toBeNull();
    expect(reviews.size).toBe(0);
  });

  it('refuses a cell that changed since the diff was made', () => {
    expect(() =>
      reviews.show(cell, 'y = 2  # edited', review('y = 2'), reply => replies.push(reply))
    ).toThrow('cell c1 changed since it was approved (the diff was made)');
    expect(cell.childElementCount).toBe(0);
    expect(reviews.size).toBe(0);
  });

  it('dismisses undecided reviews without an answer', () => {
    reviews.show(cell, 'a', review('a', 1), reply => replies.push(reply));
    reviews.show(cell, 'a', review('a', 2), reply => replies.push(reply));
    expect(cell.querySelectorAll('.jp-agent-diff')).toHaveLength(2);
    reviews.dismiss();
    expect(cell.querySelectorAll('.jp-agent-diff')).toHaveLength(0);
    expect(reviews.size).toBe(0);
    expect(replies).toEqual([]);
  });
});
