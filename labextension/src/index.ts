/**
 * jupyter-agent's notebook half: the plugins.
 *
 * `jupyter-agent:coauthor` links each open notebook panel to its kernel's agent
 * (`coauthor.ts`): the agent reads the notebook and inserts, edits, runs and deletes its cells
 * (`operations.ts`, `journal.ts`, `review.ts`) over the comm `protocol.ts` describes.
 * It also keeps each `%%agent` cell's record of its last turn in the cell (`record_keeper.ts`), so
 * the kernel replays the turn when the cell runs again.
 * `jupyter-agent:collab-outputs` keeps cell outputs in order under real-time collaboration.
 * `jupyter-agent:beside-console` sends a console's `%agent ask`, typed while a cell runs, to a
 * kernel subshell, as a notebook's agent cell is (`console.ts`, `beside.ts`).
 */
import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { IConsoleTracker } from '@jupyterlab/console';
import { INotebookTracker } from '@jupyterlab/notebook';
import { CoAuthor } from './coauthor';
import { collabOutputs } from './collab_outputs';
import { ConsoleBeside } from './console';
import { RecordKeeper } from './record_keeper';

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-agent:coauthor',
  description: 'The agent inserts, edits and runs cells of the open notebook.',
  autoStart: true,
  requires: [INotebookTracker],
  activate: (_app: JupyterFrontEnd, tracker: INotebookTracker) => {
    tracker.widgetAdded.connect((_, panel) => {
      new CoAuthor(panel);
      new RecordKeeper(panel);
    });
  }
};

/** Optional both: a front end without consoles (or notebooks) simply has nothing to route. */
const besideConsole: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-agent:beside-console',
  description: "A console's %agent ask, typed while a cell runs, is answered beside it.",
  autoStart: true,
  optional: [IConsoleTracker, INotebookTracker],
  activate: (
    _app: JupyterFrontEnd,
    consoles: IConsoleTracker | null,
    notebooks: INotebookTracker | null
  ) => {
    consoles?.widgetAdded.connect((_, panel) => {
      new ConsoleBeside(panel, notebooks);
    });
  }
};

export default [plugin, collabOutputs, besideConsole];
