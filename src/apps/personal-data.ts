import type { PersonalData } from '../platform/personal-data.js';

/** What this area keeps about people (docs/reference/personal-data.md is made from every area's list). */
export const personalData: readonly PersonalData[] = [
  { area: 'apps', collection: 'apps', holds: 'apps a member made: name, webhook URL, owner', erasure: 'the account\'s apps removed for everyone (unlisted, credentials revoked, out of every room); the records stay, by owner id', exported: 'apps.json: the apps they made', keepsId: 'an app record names its owner\'s id: the app\'s activity and payments point at it' },
  { area: 'apps', collection: 'app_manifests', holds: 'an app\'s manifests (no personal data)', erasure: 'kept with the app', exported: '—' },
  { area: 'apps', collection: 'app_credentials', holds: 'bot tokens and payments keys (hashes), by app', erasure: 'revoked with the app', exported: '—' },
  { area: 'apps', collection: 'room_apps', holds: 'which apps are in which rooms, and who added them', erasure: 'the account\'s apps taken out of every room', exported: '—', keepsId: 'who added an app to a room, by id' },
  { area: 'apps', collection: 'app_installs', holds: 'a member\'s installs of apps', erasure: 'removed', exported: 'apps.json: the apps they installed' },
  { area: 'apps', collection: 'app_identities', holds: 'the id each app knows a member by', erasure: 'forgotten: the link from the app\'s id to the member is cut (`forgottenAt`)', exported: 'apps.json', keepsId: 'the per-app id stays, cut from its key, so the app\'s records of it never name someone new' },
  { area: 'apps', collection: 'app_invocations', holds: 'forms under way (who, which step), for an hour', erasure: 'expire within the hour (the maintenance sweep)', exported: '—', keepsId: 'a form under way for at most an hour' },
  { area: 'apps', collection: 'app_activity', holds: 'calls to an app\'s webhook: bodies as sent (the member\'s per-app id, their answers to the app\'s forms)', erasure: 'kept 30 days for the app\'s owner, then removed', exported: '—', keepsId: 'the bodies sent to the app name the member by the app\'s id, as the app itself received them' },
  { area: 'apps', collection: 'app_deliveries', holds: 'webhook deliveries under way (sealed bodies)', erasure: 'pending ones of the account\'s apps given up; others end within their retries', exported: '—', keepsId: 'as the activity' },
  { area: 'apps', collection: 'app_payments', holds: 'payments members made to apps: payer, amount, reference, description', erasure: 'kept: the books', exported: 'apps.json', keepsId: 'money records: the payer\'s id stays beside the ledger\'s entries' },
  { area: 'apps', collection: 'app_money_requests', holds: 'refunds and payouts apps made to members', erasure: 'kept: the books', exported: '—', keepsId: 'money records, as payments' },
  { area: 'apps', redisKeys: 'apps.breakerOpen, breakerProbe, breakerFailures, inflight, botCards, followUpUses', holds: 'an app\'s breaker and counters (no person)', erasure: 'expire by themselves', exported: '—' },
];
