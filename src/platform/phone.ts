import { parsePhoneNumberFromString } from 'libphonenumber-js/max';

/** The E.164 form of an international phone number, or null when it is not a valid number. */
export function normalizePhone(input: string): string | null {
  const parsed = parsePhoneNumberFromString(input.trim());
  return parsed && parsed.isValid() ? parsed.number : null;
}
