/** Outputs larger than this (as JSON) are left out of event data; the receiver reads the resource instead. */
const MAX_OUTPUT_BYTES = 64 * 1024;

/**
 * An event's `data`: the resource as its GET shows it, with `links.self` to read it again, and
 * an `output` past 64 KiB replaced by null with `outputTruncated: true`.
 */
export function resourceEventData(resource: { output?: unknown }, self: string): Record<string, unknown> {
  const truncated = Buffer.byteLength(JSON.stringify(resource.output ?? null)) > MAX_OUTPUT_BYTES;
  return { ...resource, output: truncated ? null : (resource.output ?? null), outputTruncated: truncated, links: { self } };
}
