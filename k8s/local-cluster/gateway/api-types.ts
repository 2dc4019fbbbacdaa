/**
 * The subset of Gateway API v1 objects the local gateway reads (sigs.k8s.io/gateway-api
 * apis/v1). The CRDs' OpenAPI schemas have already validated them on the server, so the shapes are
 * trusted here; every field the spec makes optional is optional.
 */
export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  generation?: number;
  creationTimestamp?: string | Date;
  resourceVersion?: string;
  labels?: Record<string, string>;
}

export interface Condition {
  type: string;
  status: "True" | "False" | "Unknown";
  reason: string;
  message: string;
  observedGeneration: number;
  lastTransitionTime: string;
}

export interface GatewayClass {
  metadata: ObjectMeta;
  spec: { controllerName: string };
  status?: { conditions?: Condition[] };
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

export interface Listener {
  name: string;
  port: number;
  protocol: string;
  hostname?: string;
  allowedRoutes?: {
    namespaces?: { from?: "All" | "Same" | "Selector"; selector?: LabelSelector };
    kinds?: { group?: string; kind: string }[];
  };
}

export interface Gateway {
  metadata: ObjectMeta;
  spec: { gatewayClassName: string; listeners: Listener[] };
  status?: {
    addresses?: { type?: string; value: string }[];
    conditions?: Condition[];
    listeners?: { name: string; conditions?: Condition[] }[];
  };
}

export interface ParentRef {
  group?: string;
  kind?: string;
  namespace?: string;
  name: string;
  sectionName?: string;
  port?: number;
}
export interface BackendRef {
  group?: string;
  kind?: string;
  name: string;
  namespace?: string;
  port?: number;
  weight?: number;
}
export interface HeaderMatch {
  type?: "Exact" | "RegularExpression";
  name: string;
  value: string;
}

export interface HttpRouteMatch {
  path?: { type?: "Exact" | "PathPrefix" | "RegularExpression"; value?: string };
  headers?: HeaderMatch[];
  queryParams?: HeaderMatch[];
  method?: string;
}
export interface GrpcRouteMatch {
  method?: { type?: "Exact" | "RegularExpression"; service?: string; method?: string };
  headers?: HeaderMatch[];
}

export interface RouteParentStatus {
  parentRef: ParentRef;
  controllerName: string;
  conditions: Condition[];
}

export interface HttpRoute {
  metadata: ObjectMeta;
  spec: {
    parentRefs?: ParentRef[];
    hostnames?: string[];
    rules?: { matches?: HttpRouteMatch[]; backendRefs?: BackendRef[] }[];
  };
  status?: { parents?: RouteParentStatus[] };
}
export interface GrpcRoute {
  metadata: ObjectMeta;
  spec: {
    parentRefs?: ParentRef[];
    hostnames?: string[];
    rules?: { matches?: GrpcRouteMatch[]; backendRefs?: BackendRef[] }[];
  };
  status?: { parents?: RouteParentStatus[] };
}

export type RouteKind = "HTTPRoute" | "GRPCRoute";
export const GROUP = "gateway.networking.k8s.io";
