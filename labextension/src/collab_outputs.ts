/**
 * Under real-time collaboration, keeps each page's cell outputs in the shared document's order.
 *
 * Why: JupyterLab 4 (4.6 included) applies another page's change to a cell's outputs as
 * "remove the deleted ones where the change says, append the inserted ones at the end"
 * (`CodeCellModel`'s handler of the shared model's `outputsChange`). A change that inserts
 * anywhere but at the end — the kernel's `update_display_data` of any output but the last, as a
 * progress display does, and as every `%%agent` cell does when its turn ends (its Stop button and
 * its tool-call views become their static record) — moves that output to the end in the other
 * pages, and the next such change, addressed by position, removes the wrong output there: they
 * show outputs twice, lose others, and order them differently until reloaded. The page that ran
 * the cell is right, and so are the shared document and the file on disk.
 *
 * So after a change that inserts outputs before the end, a page compares its outputs with the
 * shared document's and, if they differ, sets them from it, without writing them back (the shared
 * document is right already). Changes that only append or delete — streaming, a cell's run — are
 * not looked at, and nothing is watched in a notebook that is not collaborative.
 */
import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICellModel, ICodeCellModel } from '@jupyterlab/cells';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';

/** One operation of a Yjs array delta. */
interface IDeltaOp {
  insert?: unknown[];
  delete?: number;
  retain?: number;
}

/**
 * Whether the change `delta`, after which the list holds `length` items, inserted anything
 * before its end (the case JupyterLab applies wrongly in the other pages).
 */
export function insertsBeforeEnd(delta: IDeltaOp[], length: number): boolean {
  let index = 0; // in the list after the change
  for (const op of delta) {
    if (op.retain !== undefined) {
      index += op.retain;
    } else if (op.insert !== undefined) {
      index += op.insert.length;
      if (index < length) {
        return true;
      }
    }
  }
  return false;
}

/** JSON with its keys sorted, to compare two outputs whatever order their keys came in. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, item) =>
    item && typeof item === 'object' && !Array.isArray(item)
      ? Object.fromEntries(
          Object.keys(item)
            .sort()
            .map(key => [key, item[key]])
        )
      : item
  );
}

/** Set the cell's outputs from the shared document when they differ from it. */
function repair(model: ICodeCellModel): void {
  const shared = model.sharedModel.getOutputs();
  const outputs = model.outputs;
  if (canonical(outputs.toJSON()) === canonical(shared)) {
    return;
  }
  // `onOutputsChange` writes the model's changes into the shared document: not these. (A
  // JupyterLab without it, under that name, is left as it is: repairing there would echo.)
  const cell = model as any;
  if (typeof cell.onOutputsChange !== 'function') {
    return;
  }
  outputs.changed.disconnect(cell.onOutputsChange, cell);
  try {
    outputs.fromJSON(shared);
  } finally {
    outputs.changed.connect(cell.onOutputsChange, cell);
  }
  const count = Number(document.body.dataset.jupyterAgentOutputRepairs ?? 0);
  document.body.dataset.jupyterAgentOutputRepairs = String(count + 1); // for the tests
}

/** Repair the code cell `model` after each change that JupyterLab applies wrongly. */
function watchCell(model: ICellModel, watched: WeakSet<ICellModel>): void {
  if (model.type !== 'code' || watched.has(model)) {
    return;
  }
  watched.add(model);
  const code = model as ICodeCellModel;
  // the shared outputs' length without copying them (`outputs` would: a cell's every output)
  const shared = code.sharedModel as unknown as { youtputs?: { length: number } };
  // connected after the model's own handler, which the model connected when it was made
  code.sharedModel.changed.connect((_, change) => {
    const delta = change.outputsChange as IDeltaOp[] | undefined;
    if (
      !code.isDisposed &&
      delta &&
      insertsBeforeEnd(delta, shared.youtputs?.length ?? code.outputs.length)
    ) {
      repair(code);
    }
  });
}

async function watchNotebook(panel: NotebookPanel): Promise<void> {
  await panel.context.ready;
  const model = panel.context.model;
  if (!model.collaborative) {
    return;
  }
  const watched = new WeakSet<ICellModel>();
  for (let i = 0; i < model.cells.length; i++) {
    watchCell(model.cells.get(i), watched);
  }
  model.cells.changed.connect((_, change) => {
    for (const cell of change.newValues) {
      watchCell(cell, watched);
    }
  });
}

export const collabOutputs: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-agent:collab-outputs',
  description:
    "Keeps cell outputs in the shared document's order in every page under collaboration.",
  autoStart: true,
  requires: [INotebookTracker],
  activate: (_app: JupyterFrontEnd, tracker: INotebookTracker) => {
    tracker.widgetAdded.connect((_, panel) => {
      void watchNotebook(panel);
    });
  }
};
