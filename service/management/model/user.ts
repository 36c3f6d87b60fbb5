import type { ManagementStore } from "../store/store";

/** An account's settings as GraphQL `myself` shows them. */
export interface UserSettings {
  id: string;
  /** SSH public keys (one per line) pods would be given; "" when none. */
  pubKey: string;
}

/** The account's own settings (`myself { pubKey }`, `updateUserSettings`). */
export class UserService {
  readonly #store: ManagementStore;

  constructor(deps: { store: ManagementStore }) {
    this.#store = deps.store;
  }

  get(accountId: string): UserSettings {
    return { id: accountId, pubKey: this.#store.pubKey(accountId) };
  }

  /** Absent fields are unchanged. */
  update(accountId: string, changes: { pubKey?: string | undefined }): UserSettings {
    if (changes.pubKey !== undefined) this.#store.putPubKey(accountId, changes.pubKey);
    return this.get(accountId);
  }
}
