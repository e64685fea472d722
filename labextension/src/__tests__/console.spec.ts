/**
 * Whether a console's agent line may go beside a running cell: only to a kernel whose agent is
 * known to be loaded — announced on the console's own connection since the kernel started, or
 * connected to a notebook page on the same kernel. Any other kernel's agent, a notebook page
 * not connected, or nothing seen at all: the line waits on the main shell (and says so).
 */
import type { KernelMessage } from '@jupyterlab/services';
import { AgentAnswers, consoleAgentLoaded, isAgentHello } from '../console';
import { HELLO, TARGET } from '../protocol';

describe('consoleAgentLoaded', () => {
  it('is loaded once the console saw the kernel announce its agent', () => {
    expect(consoleAgentLoaded('k1', true, [])).toBe(true);
  });

  it('is loaded when a notebook page on the same kernel is connected to its agent', () => {
    const notebooks = [
      { kernelId: 'k2', connected: true },
      { kernelId: 'k1', connected: true }
    ];
    expect(consoleAgentLoaded('k1', false, notebooks)).toBe(true);
  });

  it.each([
    ['no notebook open', []],
    ['a connected notebook on another kernel', [{ kernelId: 'k2', connected: true }]],
    ['a notebook on the same kernel, not connected', [{ kernelId: 'k1', connected: false }]],
    ['a notebook with no kernel yet', [{ kernelId: undefined, connected: true }]]
  ])('is not loaded with %s and no announcement', (_name, notebooks) => {
    expect(consoleAgentLoaded('k1', false, notebooks)).toBe(false);
  });
});

function iopub(msgType: string, content: object): KernelMessage.IIOPubMessage {
  return {
    header: { msg_type: msgType },
    parent_header: {},
    metadata: {},
    content,
    channel: 'iopub'
  } as unknown as KernelMessage.IIOPubMessage;
}

describe('isAgentHello', () => {
  it('is the hello comm the kernel opens as the agent loads', () => {
    expect(isAgentHello(iopub('comm_open', { comm_id: 'c', target_name: HELLO, data: {} }))).toBe(
      true
    );
  });

  it.each([
    ['another comm', iopub('comm_open', { comm_id: 'c', target_name: 'jupyter.widget' })],
    ["the page's own co-author comm", iopub('comm_open', { comm_id: 'c', target_name: TARGET })],
    ['a stream that prints the name', iopub('stream', { name: 'stdout', text: HELLO })],
    ['a comm message', iopub('comm_msg', { comm_id: 'c', data: { target_name: HELLO } })]
  ])('is not %s', (_name, msg) => {
    expect(isAgentHello(msg)).toBe(false);
  });
});

function message(
  msgType: string,
  id: string,
  parent: string,
  content: object
): KernelMessage.IMessage {
  return {
    header: { msg_type: msgType, msg_id: id },
    parent_header: parent ? { msg_id: parent } : {},
    metadata: {},
    content,
    channel: 'shell'
  } as unknown as KernelMessage.IMessage;
}

describe('AgentAnswers', () => {
  it('sees the agent loaded when an agent line of the console ran without error', () => {
    const answers = new AgentAnswers();
    const asked = message('execute_request', 'a', '', { code: '%agent ask "how is it going?"' });
    expect(answers.answered(asked, 'send')).toBe(false);
    expect(answers.answered(message('execute_reply', 'r', 'a', { status: 'ok' }), 'recv')).toBe(
      true
    );
  });

  it.each([
    ['an agent line that failed (no %agent magic)', '%agent ask hi', 'error'],
    ['ordinary code that ran', 'x = 1', 'ok'],
    ['a housekeeping line', '%agent usage', 'ok']
  ])('does not with %s', (_name, code, status) => {
    const answers = new AgentAnswers();
    answers.answered(message('execute_request', 'a', '', { code }), 'send');
    expect(answers.answered(message('execute_reply', 'r', 'a', { status }), 'recv')).toBe(false);
  });

  it("does not with another request's reply", () => {
    const answers = new AgentAnswers();
    answers.answered(message('execute_request', 'a', '', { code: '%agent ask hi' }), 'send');
    expect(answers.answered(message('execute_reply', 'r', 'b', { status: 'ok' }), 'recv')).toBe(
      false
    );
  });
});
