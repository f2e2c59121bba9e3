/**
 * An OTLP/gRPC trace receiver on 127.0.0.1 for the --tracing-config-file tests: grpc-js serving the
 * collector's TraceService/Export, the requests decoded with a minimal copy of the OTLP trace protos
 * (opentelemetry/proto/collector/trace/v1 and trace/v1), every span kept in arrival order.
 */
import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';

const OTLP_PROTO = `
syntax = "proto3";
package opentelemetry.proto.collector.trace.v1;
message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; }
message Resource { repeated KeyValue attributes = 1; }
message ScopeSpans { Scope scope = 1; repeated Span spans = 2; }
message Scope { string name = 1; string version = 2; }
message Span {
  bytes trace_id = 1; bytes span_id = 2; string trace_state = 3; bytes parent_span_id = 4; string name = 5;
  int32 kind = 6; fixed64 start_time_unix_nano = 7; fixed64 end_time_unix_nano = 8; repeated KeyValue attributes = 9;
  Status status = 15;
}
message Status { string message = 2; int32 code = 3; }
message KeyValue { string key = 1; AnyValue value = 2; }
message AnyValue { oneof value { string string_value = 1; bool bool_value = 2; int64 int_value = 3; double double_value = 4; } }
`;

/** One received span; ids in hex, parentSpanId '' for a root span. */
export interface ReceivedSpan {
  resource: Record<string, unknown>;
  /** The instrumentation scope's name. */
  scope: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP SpanKind: 1 INTERNAL, 2 SERVER, 3 CLIENT. */
  kind: number;
  start: bigint;
  end: bigint;
  attributes: Record<string, unknown>;
  status: { code: number; message: string };
}

export interface OtlpReceiver {
  /** host:port, as a TracingConfiguration's endpoint. */
  endpoint: string;
  spans: ReceivedSpan[];
  close(): void;
}

function attrs(list: any[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kv of list ?? []) {
    const v = kv.value ?? {};
    out[kv.key] = v.string_value ?? v.bool_value ?? (v.int_value !== undefined ? Number(v.int_value) : v.double_value);
  }
  return out;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const Request = protobuf.parse(OTLP_PROTO, { keepCase: true }).root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
  const spans: ReceivedSpan[] = [];
  const server = new grpc.Server();
  const identity = (b: Buffer): Buffer => b;
  server.addService(
    {
      Export: {
        path: '/opentelemetry.proto.collector.trace.v1.TraceService/Export',
        requestStream: false,
        responseStream: false,
        requestSerialize: identity,
        requestDeserialize: identity,
        responseSerialize: identity,
        responseDeserialize: identity,
      },
    },
    {
      Export: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
        const msg = Request.toObject(Request.decode(call.request), { longs: String, bytes: Buffer }) as any;
        for (const rs of msg.resource_spans ?? []) {
          const resource = attrs(rs.resource?.attributes);
          for (const ss of rs.scope_spans ?? []) {
            for (const s of ss.spans ?? []) {
              spans.push({
                resource,
                scope: String(ss.scope?.name ?? ''),
                traceId: Buffer.from(s.trace_id).toString('hex'),
                spanId: Buffer.from(s.span_id).toString('hex'),
                parentSpanId: s.parent_span_id ? Buffer.from(s.parent_span_id).toString('hex') : '',
                name: s.name,
                kind: s.kind ?? 0,
                start: BigInt(s.start_time_unix_nano ?? 0),
                end: BigInt(s.end_time_unix_nano ?? 0),
                attributes: attrs(s.attributes),
                status: { code: s.status?.code ?? 0, message: s.status?.message ?? '' },
              });
            }
          }
        }
        cb(null, Buffer.alloc(0));
      },
    },
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return { endpoint: `127.0.0.1:${port}`, spans, close: () => server.forceShutdown() };
}
