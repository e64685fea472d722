/**
 * @jest-environment jsdom
 *
 * The buttons the page answers for the kernel are found by what the kernel put on them: the
 * agent's Stop button by its class (a user's own "Stop" button interrupts nothing), a plan's Go
 * button by its class and nonce, in a cell's outputs only.
 */
import { goButton, GO_CLASS, STOP_CLASS, stopButton } from '../buttons';

/** Markup as the page holds it, attached to the document. */
function page(html: string): HTMLElement {
  document.body.innerHTML = html;
  return document.body;
}

const NONCE = '0123456789abcdef0123456789abcdef';

describe('stopButton', () => {
  it("finds the agent's Stop button, from the button or from its icon", () => {
    const body = page(
      `<div class="jp-Cell"><div class="jp-OutputArea">` +
        `<button class="jupyter-button widget-button ${STOP_CLASS}">` +
        `<i class="fa fa-stop"></i>Stop</button></div></div>`
    );
    const button = body.querySelector('button')!;
    expect(stopButton(button)).toBe(button);
    expect(stopButton(body.querySelector('i'))).toBe(button);
  });

  it('finds it whatever it says (it says "Stopping…" once clicked)', () => {
    const body = page(`<button class="${STOP_CLASS}">Stopping…</button>`);
    expect(stopButton(body.querySelector('button'))).not.toBeNull();
  });

  it.each([
    ['a widget labelled Stop', '<button class="jupyter-button widget-button">Stop</button>'],
    ['a button labelled "Stop the server"', '<button>Stop the server</button>'],
    ['a non-button with the class', `<div class="${STOP_CLASS}">Stop</div>`]
  ])('ignores %s', (_what, html) => {
    const body = page(html);
    expect(stopButton(body.firstElementChild)).toBeNull();
  });

  it('ignores what is not an element', () => {
    expect(stopButton(null)).toBeNull();
    expect(stopButton(document.createTextNode('Stop'))).toBeNull();
  });
});

describe('goButton', () => {
  const go = (attributes: string) =>
    `<button class="${GO_CLASS}" ${attributes}>Go</button>`;

  it("finds a plan's Go button in a cell's outputs, with its nonce and cell", () => {
    const body = page(
      `<div class="jp-Cell" id="plan"><div class="jp-OutputArea">` +
        `${go(`data-agent-go="${NONCE}"`)}</div></div>`
    );
    const found = goButton(body.querySelector('button'));
    expect(found).not.toBeNull();
    expect(found!.nonce).toBe(NONCE);
    expect(found!.cell).toBe(body.querySelector('#plan'));
    expect(found!.button).toBe(body.querySelector('button'));
  });

  it.each([
    ['without a nonce', `<div class="jp-Cell"><div class="jp-OutputArea">${go('')}</div></div>`],
    [
      'with a nonce that is not one',
      `<div class="jp-Cell"><div class="jp-OutputArea">${go('data-agent-go="run-me"')}</div></div>`
    ],
    [
      'disabled',
      `<div class="jp-Cell"><div class="jp-OutputArea">` +
        `${go(`data-agent-go="${NONCE}" disabled`)}</div></div>`
    ],
    [
      'outside the output area (a Markdown cell)',
      `<div class="jp-Cell"><div class="jp-MarkdownOutput">` +
        `${go(`data-agent-go="${NONCE}"`)}</div></div>`
    ],
    [
      'in an output area outside any cell',
      `<div class="jp-OutputArea">${go(`data-agent-go="${NONCE}"`)}</div>`
    ],
    [
      "in a cell drawn inside another cell's output",
      `<div class="jp-Cell"><div class="jp-OutputArea"><div class="jp-Cell">` +
        `${go(`data-agent-go="${NONCE}"`)}</div></div></div>`
    ]
  ])('ignores one %s', (_what, html) => {
    const body = page(html);
    expect(goButton(body.querySelector('button'))).toBeNull();
  });
});
