/**
 * What the kernel is told about a notebook's cells: each cell's id, type, source, execution
 * count, whether it changed since it ran, whether the agent wrote it, and its outputs as a short
 * excerpt of text (the agent reads images by running the cell, not from here).
 */
import type { ICellModel, ICodeCellModel } from '@jupyterlab/cells';
import type { IError, IOutput, IStream } from '@jupyterlab/nbformat';
import type { ICellInfo } from './protocol';

/** Characters of a cell's outputs the kernel is told about. */
export const EXCERPT_CHARS = 600;

/** The metadata key the agent marks its cells with (`{author: 'agent'}`). */
export const METADATA_KEY = 'jupyter_agent';

/** Whether a cell was written by the agent (its metadata says so). */
export function isAgentCell(model: ICellModel): boolean {
  const meta = model.getMetadata(METADATA_KEY) as { author?: unknown } | undefined;
  return !!meta && meta.author === 'agent';
}

export function clip(text: string, limit: number): string {
  return text.length <= limit ? text : text.slice(0, limit) + '…';
}

function joined(text: unknown): string {
  return Array.isArray(text) ? text.join('') : String(text);
}

/** One output as text: a stream's text, an error's name and value, a display's plain text and
 * the media types it has besides. */
export function outputText(out: IOutput): string {
  if (out.output_type === 'stream') {
    return joined((out as IStream).text);
  }
  if (out.output_type === 'error') {
    const error = out as IError;
    return `${error.ename}: ${error.evalue}`;
  }
  const data = (out.data || {}) as { [mime: string]: unknown };
  const plain = data['text/plain'];
  const kinds = Object.keys(data).filter(k => k !== 'text/plain');
  const text = plain ? joined(plain) : '';
  return [text, kinds.length ? `[${kinds.join(', ')}]` : ''].filter(s => s).join(' ');
}

export function outputExcerpt(model: ICellModel): string {
  if (model.type !== 'code') {
    return '';
  }
  const parts: string[] = [];
  const outputs = (model as ICodeCellModel).outputs;
  for (let i = 0; i < outputs.length; i++) {
    parts.push(outputText(outputs.get(i).toJSON()));
  }
  return clip(parts.join('\n'), EXCERPT_CHARS);
}

/** The cell as the kernel is told about it; `ran`: the source it last ran with, if known. */
export function cellInfo(cell: ICellModel, ran: string | undefined): ICellInfo {
  const source = cell.sharedModel.getSource();
  const count = cell.type === 'code' ? (cell as ICodeCellModel).executionCount : null;
  return {
    id: cell.id,
    cell_type: cell.type,
    source,
    execution_count: count ?? null,
    edited: count !== null && ran !== undefined && ran !== source,
    outputs: outputExcerpt(cell),
    agent: isAgentCell(cell)
  };
}
