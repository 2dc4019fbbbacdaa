/**
 * The local cluster reads Kubernetes API failures exactly as drover's Kubernetes host strategy
 * does, so it reuses that reading (test infrastructure may depend on platform code, not the reverse).
 */
export { apiFailure, isApiCode, type ApiFailure } from "../../../platform/hosts/kubernetes/api-errors.ts";
