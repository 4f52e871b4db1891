import type { AppsService } from '../console/console.service.js';
import type { AppsRepo } from '../apps.repo.js';
import { AppsErrors } from '../apps.errors.js';
import type { Card } from '../shared/cards.js';
import { appText } from '../../messages/index.js';

/**
 * The bot interface (`/bot-api/v1`): an app's server posts cards into a room with a bot token
 * (`bbt_…`, found by its id and compared with its hash in constant time). A room's token opens only
 * its own room, the app's token (made without a room) every room the app is in, each while it is; each token has a budget of messages (cards and texts) per minute.
 */
export class BotService {
  constructor(
    private readonly deps: {
      apps: Pick<AppsService, 'verifyCredential'>;
      repo: AppsRepo;
      postCard: (roomId: string, appId: string, card: Card) => Promise<{ id: string; createdAt: string }>;
      postText: (roomId: string, appId: string, text: string) => Promise<{ id: string; createdAt: string }>;
      /** Counts one card of the token; throws 429 past its budget. */
      countCard: (credentialId: string) => Promise<void>;
    },
  ) {}

  async postCard(authorization: string | undefined, roomId: string, card: Card): Promise<{ messageId: string; roomId: string; createdAt: string }> {
    const credential = await this.credentialFor(authorization, roomId);
    await this.deps.countCard(credential._id);
    const posted = await this.deps.postCard(roomId, credential.appId, card);
    return { messageId: posted.id, roomId, createdAt: posted.createdAt };
  }

  /** A plain text message, as a card is posted (the same token, room and budget; a text refused costs nothing of it). */
  async postText(authorization: string | undefined, roomId: string, text: string): Promise<{ messageId: string; roomId: string; createdAt: string }> {
    const credential = await this.credentialFor(authorization, roomId);
    const cleaned = appText(text);
    await this.deps.countCard(credential._id);
    const posted = await this.deps.postText(roomId, credential.appId, cleaned);
    return { messageId: posted.id, roomId, createdAt: posted.createdAt };
  }

  /** The bot token presented, for this room; 401 or 403 else. */
  private async credentialFor(authorization: string | undefined, roomId: string) {
    const presented = /^Bearer (\S+)$/.exec(authorization ?? '')?.[1];
    const credential = presented ? await this.deps.apps.verifyCredential(presented, 'BOT_TOKEN') : null;
    if (!credential) throw AppsErrors.BOT_TOKEN_INVALID();
    // A room's token opens its room; the app's token (no room) every room the app is in, while it is.
    if ((credential.roomId !== null && credential.roomId !== roomId) || !(await this.deps.repo.isInRoom(roomId, credential.appId))) throw AppsErrors.BOT_TOKEN_OTHER_ROOM();
    return credential;
  }
}
