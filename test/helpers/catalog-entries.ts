// Valid catalog-file entries, one of each kind, to build test catalogs from; `over`
// replaces or adds fields.
export const image = (over: Record<string, unknown> = {}) => ({
  slug: 'ubuntu-24-04',
  name: 'Ubuntu 24.04 LTS',
  distribution: 'Ubuntu',
  version: '24.04',
  type: 'base',
  min_disk_gb: 10,
  ...over,
});

export const plan = (over: Record<string, unknown> = {}) => ({
  id: 's-1vcpu-1gb',
  slug: 's-1vcpu-1gb',
  vcpus: 1,
  memory_mb: 1024,
  disk_gb: 25,
  transfer_tb: 1,
  type: 'general',
  price_monthly: 6,
  ...over,
});

export const region = (over: Record<string, unknown> = {}) => ({
  slug: 'nyc3',
  name: 'New York 3',
  available: true,
  features: ['backups', 'ipv6'],
  ...over,
});
