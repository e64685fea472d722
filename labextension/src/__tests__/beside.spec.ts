/**
 * @jest-environment jsdom
 *
 * Where an execute request goes while another cell runs: an agent cell beside it, on the
 * kernel's subshell, when the kernel has one and the agent is loaded; otherwise it waits on
 * the main shell and the page says so; every other cell goes where it always went. The Stop of
 * an answer beside a running cell is told apart from the Stop of a run_cell. Whether the kernel
 * has subshells is known from the control channel while the main shell is still busy.
 */
import {
  BESIDE_CLASS,
  inBesideCell,
  IRouteState,
  isAgentSource,
  movable,
  route,
  subshellsSupported
} from '../beside';
import type { Kernel, KernelMessage } from '@jupyterlab/services';
import { Signal } from '@lumino/signaling';

const BUSY: IRouteState = {
  source: '%%agent\nHow is the loop doing?',
  agentLoaded: true,
  subshell: 'abc',
  mainBusy: true,
  waitingAhead: false
};

describe('isAgentSource', () => {
  it.each([
    '%%agent\nHow is the loop doing?',
    '%%agent --model claude-x --out a\nWhat is in df?',
    '\n%%agent\nleading blank line',
    '%agent ask "how is the loop doing?"',
    '  %agent ask how is it going'
  ])('%j is an agent cell', source => {
    expect(isAgentSource(source)).toBe(true);
  });

  it.each([
    ['ordinary code', 'x = 1'],
    ['a prompt-less cell', '%%agent\n   \n'],
    ['another cell magic', '%%agentx\nhi'],
    ['housekeeping', '%agent usage'],
    ['an ask among other lines', '%agent ask hi\nx = 1'],
    ['a magic after code', 'x = 1\n%%agent\nhi'],
    ['a comment', '# %%agent\nhi']
  ])('%s is not', (_what, source) => {
    expect(isAgentSource(source)).toBe(false);
  });
});

describe('movable', () => {
  it.each(['--new', '--plan', '--system "Be brief"', '--system=x', '--ne', '--sys'])(
    'a cell with %s changes the chat: it stays on the main shell',
    option => {
      expect(movable(`%%agent ${option}\nhi`)).toBe(false);
    }
  );

  it('other options move', () => {
    expect(movable('%%agent --out answer --max-turns 2 --budget 0.5\nhi')).toBe(true);
    expect(movable('%agent ask "is --new here?"')).toBe(true);
  });
});

describe('route', () => {
  it('answers an agent cell beside the running cell', () => {
    expect(route(BUSY)).toBe('beside');
    expect(route({ ...BUSY, source: '%agent ask "how is it going?"' })).toBe('beside');
  });

  it('sends every cell to the main shell when it is idle', () => {
    expect(route({ ...BUSY, mainBusy: false })).toBe('main');
  });

  it('never moves other cells', () => {
    expect(route({ ...BUSY, source: 'print(progress)' })).toBe('main');
    expect(route({ ...BUSY, source: '%agent usage' })).toBe('main');
  });

  it.each([
    ['the kernel has no subshells', { subshell: null }],
    ['the agent is not loaded in the kernel', { agentLoaded: false }],
    ['the cell changes the chat', { source: '%%agent --new\nStart over' }],
    ['a cell of this page waits ahead of it', { waitingAhead: true }]
  ])('queues an agent cell when %s', (_why, change: Partial<IRouteState>) => {
    expect(route({ ...BUSY, ...change })).toBe('queued');
  });

  it('queues it behind a waiting cell even before the main shell says busy (Run All)', () => {
    expect(route({ ...BUSY, mainBusy: false, waitingAhead: true })).toBe('queued');
  });
});

describe('inBesideCell', () => {
  it("tells a beside answer's Stop from a run_cell's", () => {
    document.body.innerHTML =
      `<div class="jp-Cell ${BESIDE_CLASS}"><button id="beside">Stop</button></div>` +
      '<div class="jp-Cell"><button id="main">Stop</button></div>';
    expect(inBesideCell(document.getElementById('beside'))).toBe(true);
    expect(inBesideCell(document.getElementById('main'))).toBe(false);
    expect(inBesideCell(null)).toBe(false);
  });
});

/** A kernel connection as `subshellsSupported` uses it: its own info, and the control channel. */
function kernelWith(
  shell: Promise<boolean> | 'never',
  control: string[] | 'never'
): { kernel: Kernel.IKernelConnection; sent: KernelMessage.IMessage[] } {
  const sent: KernelMessage.IMessage[] = [];
  const never = new Promise<never>(() => undefined);
  let supports = false;
  const kernel = {
    username: 'u',
    clientId: 'c',
    connectionStatus: 'connected',
    connectionStatusChanged: new Signal<unknown, string>({}),
    get supportsSubshells() {
      return supports;
    },
    info:
      shell === 'never'
        ? never
        : shell.then(value => {
            supports = value;
            return {};
          }),
    sendControlMessage(msg: KernelMessage.IMessage) {
      sent.push(msg);
      const done =
        control === 'never'
          ? never
          : Promise.resolve({ content: { status: 'ok', supported_features: control } });
      return { done };
    }
  };
  return { kernel: kernel as unknown as Kernel.IKernelConnection, sent };
}

describe('subshellsSupported', () => {
  it('asks on control once connected (the connection refuses it before)', async () => {
    const { kernel, sent } = kernelWith('never', ['kernel subshells']);
    const fake = kernel as unknown as {
      connectionStatus: string;
      connectionStatusChanged: Signal<unknown, string>;
      sendControlMessage: (msg: KernelMessage.IMessage) => unknown;
    };
    const send = fake.sendControlMessage;
    fake.sendControlMessage = msg => {
      if (fake.connectionStatus !== 'connected') {
        throw new Error('Could not send message: status is not connected');
      }
      return send(msg);
    };
    fake.connectionStatus = 'connecting';
    const supported = subshellsSupported(kernel);
    expect(sent).toEqual([]);
    fake.connectionStatus = 'connected';
    fake.connectionStatusChanged.emit('connected');
    await expect(supported).resolves.toBe(true);
    expect(sent).toHaveLength(1);
  });

  it('asks on control, whose yes settles it while the shell is busy', async () => {
    const { kernel, sent } = kernelWith('never', ['kernel subshells']);
    await expect(subshellsSupported(kernel)).resolves.toBe(true);
    expect(sent.map(msg => [msg.channel, msg.header.msg_type])).toEqual([
      ['control', 'kernel_info_request']
    ]);
  });

  it("takes the shell's answer when control does not answer", async () => {
    await expect(
      subshellsSupported(kernelWith(Promise.resolve(true), 'never').kernel)
    ).resolves.toBe(true);
    await expect(
      subshellsSupported(kernelWith(Promise.resolve(false), 'never').kernel)
    ).resolves.toBe(false);
  });

  it('is no when the kernel lists no subshells on either channel', async () => {
    const { kernel } = kernelWith(Promise.resolve(false), ['debugger']);
    await expect(subshellsSupported(kernel)).resolves.toBe(false);
  });

  it("waits for the shell's answer after control's no", async () => {
    let answer: (value: boolean) => void = () => undefined;
    const shell = new Promise<boolean>(resolve => (answer = resolve));
    const { kernel } = kernelWith(shell, []);
    const supported = subshellsSupported(kernel);
    await Promise.resolve(); // control's no has come back
    answer(true);
    await expect(supported).resolves.toBe(true);
  });
});
