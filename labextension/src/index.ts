/**
 * jupyter-agent's notebook half: the plugins.
 *
 * `jupyter-agent:coauthor` links each open notebook panel to its kernel's agent
 * (`coauthor.ts`): the agent reads the notebook and inserts, edits, runs and deletes its cells
 * (`operations.ts`, `journal.ts`, `review.ts`) over the comm `protocol.ts` describes.
 * It also keeps each `%%agent` cell's record of its last turn in the cell (`record_keeper.ts`), so
 * the kernel replays the turn when the cell runs again.
 * `jupyter-agent:collab-outputs` keeps cell outputs in order under real-time collaboration.
 */
import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { INotebookTracker } from '@jupyterlab/notebook';
import { CoAuthor } from './coauthor';
import { collabOutputs } from './collab_outputs';
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

export default [plugin, collabOutputs];
