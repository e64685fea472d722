/**
 * The small text rules the kernel relies on: an edit's `old_string` must occur exactly once
 * (counted without overlaps), and a cell's outputs reach the kernel as a short text excerpt.
 */
import type { IOutput } from '@jupyterlab/nbformat';
import { countOccurrences } from '../operations';
import { clip, outputText } from '../snapshot';

describe('countOccurrences', () => {
  it.each([
    ['x = 1\ny = 1', 'x = 1', 1],
    ['aaaa', 'aa', 2], // without overlaps: an edit replaces one of them
    ['abc', 'd', 0],
    ['abc', '', 0] // an empty old_string matches nothing
  ])('%j holds %j %i time(s)', (text, part, count) => {
    expect(countOccurrences(text, part)).toBe(count);
  });
});

describe('outputText', () => {
  it.each<[string, IOutput, string]>([
    ['a stream', { output_type: 'stream', name: 'stdout', text: ['a\n', 'b'] }, 'a\nb'],
    [
      'an error',
      { output_type: 'error', ename: 'ValueError', evalue: 'bad', traceback: [] },
      'ValueError: bad'
    ],
    [
      'a display with other media types',
      {
        output_type: 'display_data',
        data: { 'text/plain': '<Figure>', 'image/png': 'iVBOR' },
        metadata: {}
      },
      '<Figure> [image/png]'
    ],
    [
      'a result without plain text',
      { output_type: 'execute_result', execution_count: 1, data: { 'text/html': '<b>' }, metadata: {} },
      '[text/html]'
    ]
  ])('says what %s holds', (_what, output, text) => {
    expect(outputText(output)).toBe(text);
  });

  it('clips long text with an ellipsis', () => {
    expect(clip('abcdef', 3)).toBe('abc…');
    expect(clip('abc', 3)).toBe('abc');
  });
});
