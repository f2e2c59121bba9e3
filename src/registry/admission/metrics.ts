/**
 * Where the admission chain and the admission webhooks report what Kubernetes 1.23 measures
 * (apiserver/pkg/admission/metrics): the phase as a whole (step), each named plugin (controller), each
 * webhook call and each webhook rejection. The server implements it over its /metrics registry; the
 * registry layer only sees this interface.
 */

/** One labelled histogram series. */
export interface DurationSeries {
  observe(seconds: number): void;
}

/** 'admit' and 'validate' for the phases and plugins; webhooks say 'admit' and 'validating' (as 1.23 labels them). */
export type AdmissionStepType = 'admit' | 'validate' | 'validating';

/** error_type of apiserver_admission_webhook_rejection_count. */
export type WebhookRejectionErrorType = 'calling_webhook_error' | 'apiserver_internal_error' | 'no_error';

export interface AdmissionMetricsSink {
  /** apiserver_admission_step_admission_duration_seconds{type,operation,rejected} (and its _summary). */
  step(type: AdmissionStepType, operation: string, rejected: boolean): DurationSeries;
  /** apiserver_admission_controller_admission_duration_seconds{name,type,operation,rejected}. */
  controller(name: string, type: AdmissionStepType, operation: string, rejected: boolean): DurationSeries;
  /**
   * ObserveWebhook: apiserver_admission_webhook_admission_duration_seconds{name,type,operation,rejected} and
   * apiserver_admission_webhook_request_total{name,type,operation,code,rejected}.
   */
  webhook(name: string, type: AdmissionStepType, operation: string, rejected: boolean, code: number, seconds: number): void;
  /** apiserver_admission_webhook_rejection_count{name,type,operation,error_type,rejection_code}. */
  webhookRejection(name: string, type: AdmissionStepType, operation: string, errorType: WebhookRejectionErrorType, code: number): void;
}
