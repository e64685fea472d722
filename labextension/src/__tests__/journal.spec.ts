/**
 * The undo journal against a real shared notebook (`@jupyter/ydoc`'s YNotebook, the model a
 * JupyterLab page holds): what the agent changed is put back, what the user changed since is not.
 */
import { YNotebook } from '@jupyter/ydoc';
import { cellIndex, Journal, JOURNAL_TURNS, SharedNotebook } from '../journal';

const AGENT = { jupyter_agent: { author: 'agent' } };

const made: SharedNotebook[] = [];

afterEach(() => {
  // a shared notebook's awareness keeps a timer: disposed, jest can end
  made.splice(0).forEach(shared => shared.dispose());
});

function notebook(...sources: string[]): SharedNotebook {
  const shared: SharedNotebook = YNotebook.create({});
  made.push(shared);
  sources.forEach((source, index) =>
    shared.insertCell(index, { cell_type: 'code', source, metadata: {} })
  );
  return shared;
}

function sources(shared: SharedNotebook): string[] {
  return shared.cells.map(cell => cell.getSource());
}

/** What the page does for an insert operation: the cell, then its journal step. */
function insert(
  shared: SharedNotebook,
  journal: Journal,
  turn: string,
  index: number,
  source: string,
  turnId = turn
): string {
  const id = shared.insertCell(index, { cell_type: 'code', source, metadata: AGENT }).getId();
  journal.record({ turn, turn_id: turnId, at: 100 }, { kind: 'insert', id, after: source });
  return id;
}

/** ... an edit operation: the source replaced, then its step. */
function edit(shared: SharedNotebook, journal: Journal, turn: string, id: string, source: string) {
  const cell = shared.getCell(cellIndex(shared, id));
  const before = cell.getSource();
  cell.setSource(source);
  journal.record({ turn, turn_id: turn, at: 200 }, { kind: 'edit', id, before, after: source });
}

/** ... a delete operation. */
function remove(shared: SharedNotebook, journal: Journal, turn: string, id: string) {
  const index = cellIndex(shared, id);
  const cell = shared.getCell(index).toJSON();
  shared.deleteCell(index);
  journal.record({ turn, turn_id: turn, at: 300 }, { kind: 'delete', id, cell, index });
}

describe('Journal', () => {
  it('has nothing to undo at first', () => {
    const journal = new Journal();
    expect(journal.peek()).toEqual({});
    expect(journal.undo(notebook('a'))).toEqual({
      undone: false,
      message: 'No cell changes of the agent to undo.'
    });
  });

  it('takes back a turn: inserted cells removed, edits restored, deleted cells put back', () => {
    const shared = notebook('import pandas', 'df = load()', 'df.plot()');
    const [first, second, third] = shared.cells.map(cell => cell.getId());
    const journal = new Journal();
    const added = insert(shared, journal, 'cell 4', 1, 'df.head()');
    edit(shared, journal, 'cell 4', second, 'df = load(cache=True)');
    remove(shared, journal, 'cell 4', third);
    expect(sources(shared)).toEqual(['import pandas', 'df.head()', 'df = load(cache=True)']);

    const result = journal.undo(shared);

    expect(sources(shared)).toEqual(['import pandas', 'df = load()', 'df.plot()']);
    expect(shared.cells.map(cell => cell.getId())).toEqual([first, second, third]);
    expect(result).toEqual({
      undone: true,
      turn: 'cell 4',
      message:
        `Undid the cell changes of cell 4. Cells: put back ${third}; restored ${second}; ` +
        `removed ${added}.`,
      restored: [`put back ${third}`, `restored ${second}`, `removed ${added}`],
      skipped: []
    });
    expect(journal.length).toBe(0);
  });

  it('leaves a cell the user edited since, and says so', () => {
    const shared = notebook('x = 1');
    const journal = new Journal();
    const added = insert(shared, journal, 'cell 2', 1, 'print(x)');
    const original = shared.cells[0].getId();
    edit(shared, journal, 'cell 2', original, 'x = 2');
    shared.getCell(1).setSource('print(x)  # mine now'); // the user
    shared.getCell(0).setSource('x = 3'); // the user

    const result = journal.undo(shared);

    expect(sources(shared)).toEqual(['x = 3', 'print(x)  # mine now']);
    expect(result.skipped).toEqual([`${original} (edited since)`, `${added} (edited since)`]);
    expect(result.restored).toEqual([]);
    expect(result.message).toContain(`Not restored: ${original} (edited since); ${added}`);
  });

  it('removes a cell the agent itself edited later in the same turn', () => {
    const shared = notebook('x = 1');
    const journal = new Journal();
    const added = insert(shared, journal, 'cell 2', 1, 'print(x)');
    edit(shared, journal, 'cell 2', added, 'print(x + 1)');

    const result = journal.undo(shared);

    expect(sources(shared)).toEqual(['x = 1']);
    expect(result.restored).toEqual([`restored ${added}`, `removed ${added}`]);
  });

  it('says an edited cell deleted since cannot be restored', () => {
    const shared = notebook('x = 1', 'y = 2');
    const journal = new Journal();
    const id = shared.cells[1].getId();
    edit(shared, journal, 'cell 3', id, 'y = 3');
    shared.deleteCell(1); // the user

    expect(journal.undo(shared).skipped).toEqual([`${id} (deleted since)`]);
    expect(sources(shared)).toEqual(['x = 1']);
  });

  it('puts a deleted cell back no further than the end', () => {
    const shared = notebook('a', 'b', 'c');
    const journal = new Journal();
    const id = shared.cells[2].getId();
    remove(shared, journal, 'cell 5', id);
    shared.deleteCell(0); // the user: one cell fewer than when the agent deleted
    journal.undo(shared);
    expect(sources(shared)).toEqual(['b', 'c']);
    expect(shared.cells[1].getId()).toBe(id);
  });

  it('undoes one turn at a time, newest first, keyed by the turn', () => {
    const shared = notebook();
    const journal = new Journal();
    insert(shared, journal, 'cell 1', 0, 'first', 'msg-1');
    insert(shared, journal, 'cell 1', 1, 'first, more', 'msg-1');
    insert(shared, journal, 'cell 2', 2, 'second', 'msg-2');
    expect(journal.length).toBe(2);

    journal.undo(shared);
    expect(sources(shared)).toEqual(['first', 'first, more']);
    journal.undo(shared);
    expect(sources(shared)).toEqual([]);
  });

  it('is renamed as a turn ends, and peeks at the newest', () => {
    const shared = notebook();
    const journal = new Journal();
    insert(shared, journal, 'cell 1', 0, 'a', 'msg-1');
    insert(shared, journal, 'cell 2', 1, 'b', 'msg-2');
    journal.relabel('msg-2', 'cell 7');
    expect(journal.peek()).toEqual({ turn: 'cell 7', at: 100 });
    expect(journal.undo(shared).turn).toBe('cell 7');
    expect(journal.peek()).toEqual({ turn: 'cell 1', at: 100 });
  });

  it(`keeps the last ${JOURNAL_TURNS} turns`, () => {
    const shared = notebook();
    const journal = new Journal();
    for (let turn = 1; turn <= JOURNAL_TURNS + 1; turn++) {
      insert(shared, journal, `cell ${turn}`, turn - 1, `source ${turn}`);
    }
    expect(journal.length).toBe(JOURNAL_TURNS);
    for (let turn = JOURNAL_TURNS + 1; turn > 1; turn--) {
      expect(journal.undo(shared).turn).toBe(`cell ${turn}`);
    }
    expect(journal.undo(shared).undone).toBe(false);
    expect(sources(shared)).toEqual(['source 1']); // the forgotten turn's cell stays
  });
});
