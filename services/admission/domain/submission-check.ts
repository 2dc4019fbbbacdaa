/**
 * What is wrong with a decoded `submitted` whose envelope disagrees with the subject it was
 * published on (a trusted producer writes both; the API derives both from the token), or undefined.
 */
export function submissionSubjectMismatch(
  subject: { readonly tenantId: string; readonly sharedRunId: string },
  event: { readonly tenantId?: string; readonly data: { readonly sharedRunId: string } },
): string | undefined {
  const issues = [
    ...(event.tenantId === subject.tenantId
      ? []
      : [`tenantId ${JSON.stringify(event.tenantId ?? null)} is not the subject's tenant ${subject.tenantId}`]),
    ...(event.data.sharedRunId === subject.sharedRunId
      ? []
      : [`data.sharedRunId ${event.data.sharedRunId} is not the subject's run ${subject.sharedRunId}`]),
  ];
  return issues.length === 0 ? undefined : `event run.submitted does not match its subject: ${issues.join("; ")}`;
}
