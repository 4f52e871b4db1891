/** Every area's declaration of the personal data it keeps, together (src/platform/personal-data.ts says what each field means). */
import type { PersonalData } from './platform/personal-data.js';
import { personalData as platform } from './platform/personal-data.list.js';
import { personalData as accounts } from './accounts/personal-data.js';
import { personalData as apps } from './apps/personal-data.js';
import { personalData as attachments } from './attachments/personal-data.js';
import { personalData as auth } from './auth/personal-data.js';
import { personalData as calls } from './calls/personal-data.js';
import { personalData as contacts } from './contacts/personal-data.js';
import { personalData as devices } from './devices/personal-data.js';
import { personalData as e2ee } from './e2ee/personal-data.js';
import { personalData as messages } from './messages/personal-data.js';
import { personalData as moderation } from './moderation/personal-data.js';
import { personalData as push } from './push/personal-data.js';
import { personalData as rooms } from './rooms/personal-data.js';
import { personalData as users } from './users/personal-data.js';
import { personalData as wallets } from './wallets/personal-data.js';

export const PERSONAL_DATA: readonly PersonalData[] = [...accounts, ...apps, ...attachments, ...auth, ...calls, ...contacts, ...devices, ...e2ee, ...messages, ...moderation, ...push, ...rooms, ...users, ...wallets, ...platform];
