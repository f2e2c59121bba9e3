/**
 * The admission chain, as kube-apiserver 1.23 builds it (apiserver/pkg/admission: chainAdmissionHandler
 * wrapped by the reinvoker, each plugin decorated with controller metrics, the whole with step metrics):
 *   - mutate runs every mutating plugin in order; when one of them asked for reinvocation (a mutating
 *     webhook changed the object) the whole mutating phase runs once more, in-tree plugins included, with
 *     the request's reinvocation context saying so (reinvocation.go);
 *   - validate runs every validating plugin in order;
 *   - a CONNECT goes only to the plugins that handle it; other requests skip the plugins whose `handles`
 *     says no for the kind and operation (worked out once per kind and operation);
 *   - with metrics: each named plugin's call is observed as apiserver_admission_controller_admission_duration_seconds
 *     (type admit or validate, rejected when it threw), and each phase as a whole as
 *     apiserver_admission_step_admission_duration_seconds.
 */
import type { KindDecl } from '../kind.js';
import type { Admission, AdmissionAttributes, Operation } from '../store.js';
import type { AdmissionMetricsSink, DurationSeries } from './metrics.js';

type Phase = 'admit' | 'validate';

/** One plugin in one phase for one operation, with its metric series once used. */
class Step {
  ok: DurationSeries | undefined;
  rejected: DurationSeries | undefined;
  constructor(
    readonly plugin: Admission,
    readonly name: string | undefined,
  ) {}
}

/** The plugins of both phases for one kind and operation, with the step series once used. */
class Phases {
  readonly admit: Step[];
  readonly validate: Step[];
  /** The step series per phase: [accepted, rejected]. */
  readonly series: Record<Phase, [DurationSeries | undefined, DurationSeries | undefined]> = { admit: [undefined, undefined], validate: [undefined, undefined] };
  constructor(plugins: readonly Admission[]) {
    this.admit = plugins.filter((p) => p.mutate !== undefined).map((p) => new Step(p, p.name));
    this.validate = plugins.filter((p) => p.validate !== undefined).map((p) => new Step(p, p.name));
  }
}

export interface ChainOptions {
  /** Where the step and controller durations go (the server's /metrics); absent: nothing is measured. */
  metrics?: AdmissionMetricsSink;
}

/**
 * Runs several admission plugins in order: every mutation (again, once, when reinvocation was asked for),
 * then every validation.
 */
export function chainAdmission(plugins: readonly Admission[], options: ChainOptions = {}): Admission {
  const metrics = options.metrics;
  const connect = new Phases(plugins.filter((p) => p.handlesConnect));
  const byKind = new WeakMap<KindDecl, Map<Operation, Phases>>();
  const phases = (a: AdmissionAttributes): Phases => {
    if (a.operation === 'CONNECT') return connect;
    let ops = byKind.get(a.decl);
    if (!ops) byKind.set(a.decl, (ops = new Map()));
    let found = ops.get(a.operation);
    if (!found) {
      found = new Phases(plugins.filter((p) => !p.handles || p.handles(a.decl, a.operation)));
      ops.set(a.operation, found);
    }
    return found;
  };

  const call = (step: Step, phase: Phase, a: AdmissionAttributes): Promise<void> =>
    phase === 'admit' ? step.plugin.mutate!(a) : step.plugin.validate!(a);

  /**
   * Runs the steps in order, each named one measured when there are metrics; settles as the first rejection
   * or after the last step. Chained with then() rather than awaited in a loop: a resumed await costs more
   * (its closures, the function's frame) than a reaction, and most plugins settle at once.
   */
  function run(steps: readonly Step[], phase: Phase, a: AdmissionAttributes): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let i = 0;
      let step: Step | undefined;
      let start = 0;
      const measure = (s: Step, rejected: boolean): void => {
        if (!metrics || s.name === undefined) return;
        const series = rejected ? (s.rejected ??= metrics.controller(s.name, phase, a.operation, true)) : (s.ok ??= metrics.controller(s.name, phase, a.operation, false));
        series.observe((performance.now() - start) / 1000);
      };
      const onRejected = (err: unknown): void => {
        measure(step!, true);
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- passed on as it is, as an await rethrows it
        reject(err);
      };
      const next = (): void => {
        if (i >= steps.length) return resolve();
        step = steps[i++]!;
        if (metrics && step.name !== undefined) start = performance.now();
        let p: Promise<void>;
        try {
          p = call(step, phase, a);
        } catch (err) {
          return onRejected(err);
        }
        p.then(onFulfilled, onRejected);
      };
      const onFulfilled = (): void => {
        measure(step!, false);
        next();
      };
      next();
    });
  }

  async function mutatePhase(steps: readonly Step[], a: AdmissionAttributes): Promise<void> {
    await run(steps, 'admit', a);
    const r = a.reinvocation;
    if (r?.shouldReinvoke && !r.isReinvoke) {
      // Kubernetes' reinvoker: the whole chain again, once; webhooks pick those to call again themselves.
      r.isReinvoke = true;
      await run(steps, 'admit', a);
    }
  }

  const body = (ph: Phases, phase: Phase, a: AdmissionAttributes): Promise<void> =>
    phase === 'admit' ? mutatePhase(ph.admit, a) : run(ph.validate, 'validate', a);

  /** The phase measured as a whole. */
  async function measured(ph: Phases, phase: Phase, a: AdmissionAttributes, m: AdmissionMetricsSink): Promise<void> {
    const start = performance.now();
    let rejected = true;
    try {
      await body(ph, phase, a);
      rejected = false;
    } finally {
      const slot = ph.series[phase];
      const series = (slot[rejected ? 1 : 0] ??= m.step(phase, a.operation, rejected));
      series.observe((performance.now() - start) / 1000);
    }
  }

  /** The phase, measured as a whole when there are metrics. */
  const stepped = (ph: Phases, phase: Phase, a: AdmissionAttributes): Promise<void> => (metrics ? measured(ph, phase, a, metrics) : body(ph, phase, a));

  return {
    mutate: (a) => stepped(phases(a), 'admit', a),
    validate: (a) => stepped(phases(a), 'validate', a),
    handlesConnect: connect.admit.length + connect.validate.length > 0,
  };
}
