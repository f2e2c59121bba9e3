// orchlet's client of systemd's manager API (org.freedesktop.systemd1.Manager) on the system bus
// (DBUS_SYSTEM_BUS_ADDRESS, else unix:path=/var/run/dbus/system_bus_socket), over dbus-next: what
// libcontainer's systemd cgroup manager calls through go-systemd — StartTransientUnit and StopUnit,
// each waited for until its job is removed (JobRemoved, result "done"), SetUnitProperties,
// ResetFailedUnit and the manager's Version.
//
// One connection, opened at the first call and closed by close(). Calls time out after 30 s
// (libcontainer's wait for a job).
import * as dbus from 'dbus-next';

const DEST = 'org.freedesktop.systemd1';
const PATH = '/org/freedesktop/systemd1';
const MANAGER = 'org.freedesktop.systemd1.Manager';
const TIMEOUT_MS = 30_000;

/** A unit property: its name, D-Bus signature and value ('t' values as bigint). */
export interface UnitProperty {
  name: string;
  signature: string;
  value: unknown;
}

/** A D-Bus error answer (its name, e.g. org.freedesktop.systemd1.UnitExists). */
export class SystemdError extends Error {
  constructor(
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

export class SystemdBus {
  private bus: dbus.MessageBus | undefined;
  private ready: Promise<dbus.MessageBus> | undefined;
  /** Jobs waited for, by object path; results seen before their call returned wait in `early`. */
  private readonly waiting = new Map<string, (result: string) => void>();
  private readonly early = new Map<string, string>();
  private version: Promise<number> | undefined;

  /** The system bus: DBUS_SYSTEM_BUS_ADDRESS, else its usual socket. */
  constructor(private readonly address = process.env.DBUS_SYSTEM_BUS_ADDRESS || 'unix:path=/var/run/dbus/system_bus_socket') {}

  private connect(): Promise<dbus.MessageBus> {
    this.ready ??= new Promise<dbus.MessageBus>((resolve, reject) => {
      const bus = dbus.sessionBus({ busAddress: this.address }); // a connection to the given address (the system bus's)
      this.bus = bus;
      const onError = (err: unknown): void => {
        this.ready = undefined;
        reject(new Error(`cannot connect to the system bus (${this.address}): ${String(err)}`));
      };
      bus.once('error', onError);
      bus.on('message', (m: dbus.Message) => this.onMessage(m));
      bus.once('connect', () => {
        bus.off('error', onError);
        bus.on('error', () => undefined); // a broken connection fails the calls in flight by their timeout
        const match = `type='signal',sender='${DEST}',interface='${MANAGER}',member='JobRemoved'`;
        this.call(bus, { destination: 'org.freedesktop.DBus', path: '/org/freedesktop/DBus', interface: 'org.freedesktop.DBus', member: 'AddMatch', signature: 's', body: [match] }).then(
          () => resolve(bus),
          reject,
        );
      });
    });
    return this.ready;
  }

  private onMessage(m: dbus.Message): void {
    if (m.type !== dbus.MessageType.SIGNAL || m.interface !== MANAGER || m.member !== 'JobRemoved') return;
    const [, job, , result] = m.body as [number, string, string, string];
    const waiter = this.waiting.get(job);
    if (waiter) waiter(result);
    else this.early.set(job, result);
  }

  private async call(bus: dbus.MessageBus, msg: dbus.MessageLike): Promise<unknown[]> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer from ${msg.destination ?? ''} to ${msg.member ?? ''} within ${TIMEOUT_MS / 1000}s`)), TIMEOUT_MS);
    });
    try {
      const reply = await Promise.race([bus.call(new dbus.Message(msg)), timeout]);
      return reply?.body ?? [];
    } catch (err) {
      if (err instanceof dbus.DBusError) throw new SystemdError(err.type, `${err.type}: ${err.text}`);
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  private async manager(member: string, signature: string, body: unknown[]): Promise<unknown[]> {
    const bus = await this.connect();
    return this.call(bus, { destination: DEST, path: PATH, interface: MANAGER, member, signature, body });
  }

  /** Waits for the job's JobRemoved; its result ("done", "failed", "canceled", ...). */
  private waitJob(job: string, what: string): Promise<string> {
    const seen = this.early.get(job);
    if (seen !== undefined) {
      this.early.delete(job);
      return Promise.resolve(seen);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(job);
        reject(new Error(`Timeout waiting for systemd to ${what}`));
      }, TIMEOUT_MS);
      this.waiting.set(job, (result) => {
        clearTimeout(timer);
        this.waiting.delete(job);
        resolve(result);
      });
    });
  }

  /** The manager's Version property as a number ("252.19-1" -> 252); -1 when unknown. */
  systemdVersion(): Promise<number> {
    this.version ??= (async () => {
      const bus = await this.connect();
      const [v] = await this.call(bus, { destination: DEST, path: PATH, interface: 'org.freedesktop.DBus.Properties', member: 'Get', signature: 'ss', body: [MANAGER, 'Version'] });
      const text = String((v as dbus.Variant | undefined)?.value ?? '').replace(/^["v]+/, '');
      const n = Number(/^\d+/.exec(text)?.[0] ?? NaN);
      return Number.isFinite(n) ? n : -1;
    })().catch(() => -1);
    return this.version;
  }

  /**
   * StartTransientUnit(name, "replace", properties) and the wait for its job. Resolves false when
   * the unit exists already (libcontainer then leaves it: kubelet making sure a slice exists);
   * throws when the job ends other than "done".
   */
  async startTransientUnit(name: string, properties: readonly UnitProperty[]): Promise<boolean> {
    const props = properties.map((p) => [p.name, new dbus.Variant(p.signature, p.value)]);
    let job: string;
    try {
      [job] = (await this.manager('StartTransientUnit', 'ssa(sv)a(sa(sv))', [name, 'replace', props, []])) as [string];
    } catch (err) {
      if (err instanceof SystemdError && err.type === 'org.freedesktop.systemd1.UnitExists') return false;
      throw err;
    }
    const result = await this.waitJob(job, `create ${name}`);
    if (result !== 'done') {
      await this.resetFailedUnit(name);
      throw new Error(`error creating systemd unit \`${name}\`: got \`${result}\``);
    }
    return true;
  }

  /** SetUnitProperties(name, runtime, properties). */
  async setUnitProperties(name: string, properties: readonly UnitProperty[], runtime = true): Promise<void> {
    const props = properties.map((p) => [p.name, new dbus.Variant(p.signature, p.value)]);
    await this.manager('SetUnitProperties', 'sba(sv)', [name, runtime, props]);
  }

  /**
   * StopUnit(name, "replace"), the wait for its job, then ResetFailedUnit (a failed unit is
   * forgotten). A unit systemd does not know is stopped already.
   */
  async stopUnit(name: string): Promise<void> {
    try {
      const [job] = (await this.manager('StopUnit', 'ss', [name, 'replace'])) as [string];
      const result = await this.waitJob(job, `remove ${name}`);
      if (result !== 'done') throw new Error(`error removing unit \`${name}\`: got \`${result}\``);
    } catch (err) {
      if (!(err instanceof SystemdError && err.type === 'org.freedesktop.systemd1.NoSuchUnit')) throw err;
    } finally {
      await this.resetFailedUnit(name);
    }
  }

  async resetFailedUnit(name: string): Promise<void> {
    await this.manager('ResetFailedUnit', 's', [name]).catch(() => undefined);
  }

  close(): void {
    this.bus?.disconnect();
    this.bus = undefined;
    this.ready = undefined;
  }
}
