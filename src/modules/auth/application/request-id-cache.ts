import type { CacheItem, CacheProvider } from '@node-saml/passport-saml';
import { SamlStore } from '../domain/saml.store';

/**
 * node-saml's cache of AuthnRequest ids for one ACS request's validation, kept in the
 * SamlStore so any instance can take the answer. node-saml reads an id (`getAsync`) and, once
 * the response checks out, removes it (`removeAsync`); removing is the store's guarded
 * update, and `claimed` tells whether this request was the one that used it, so a replay
 * racing the original loses on any instance.
 */
export class RequestIdCache implements CacheProvider {
  claimed = false;

  constructor(
    private readonly store: SamlStore,
    private readonly organizationId: string,
  ) {}

  async saveAsync(key: string, value: string): Promise<CacheItem | null> {
    await this.store.saveRequest(this.organizationId, key);
    return { value, createdAt: Date.now() };
  }

  async getAsync(key: string): Promise<string | null> {
    const created = await this.store.pendingRequest(this.organizationId, key);
    return created ? created.toISOString() : null;
  }

  async removeAsync(key: string | null): Promise<string | null> {
    if (!key) return null;
    const used = await this.store.useRequest(this.organizationId, key);
    this.claimed ||= used;
    return used ? key : null;
  }
}
